#!/bin/bash
# trafgen-compare.sh: afpacket against the netsniff-ng toolkit and tcpdump on
# one veth pair, 64-byte frames, REPS interleaved repetitions of SECS seconds
# each. Run as root from the module root:
#   afpacket/scripts/trafgen-compare.sh [REPS] [SECS]
#
# It makes two namespaces and a veth pair of its own (tgA<pid>/tgB<pid>,
# tga<pid>/tgb<pid>) and deletes them on exit, whatever happens. GRO is on at
# the receiving end (tgb), so the veth passes on the in-kernel feeder's XDP
# frames; every sender and receiver under test runs on CPU 1, the feeder on
# CPU 0. Each repetition runs, in this order:
#   transmit (out of tga, nothing listening at tgb):
#     trafgen (Debian netsniff-ng: PACKET_TX_RING, qdisc bypass, its default)
#     afpacket BenchmarkTransmit
#   receive (at tgb, fed by internal/trafficgen from tga, a fresh feeder each):
#     netsniff-ng --in tgb --out /dev/null
#     tcpdump -w /dev/null
#     afpacket BenchmarkReceive
# and prints pkts/s; at the end the median, min-max and the ratio of
# afpacket to each reference. With REF_BIN set to another build of the
# afpacket test binary (go test -c at an older commit), its BenchmarkTransmit
# and BenchmarkReceive run too, interleaved, as "afpacket-ref". TX_ONLY=1
# skips the receive half.
set -euo pipefail
REPS=${1:-5}
SECS=${2:-3}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
for c in trafgen netsniff-ng tcpdump ethtool taskset; do
	command -v $c >/dev/null || { echo "$c missing (apt-get install netsniff-ng tcpdump ethtool util-linux)" >&2; exit 1; }
done

ID=$$
NA=tgA$ID NB=tgB$ID VA=tga$ID VB=tgb$ID
WORK=$(mktemp -d /tmp/pio-tg.XXXXXX)
BIN=$WORK/afpacket.test
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip netns del "$NA" 2>/dev/null || true
	ip netns del "$NB" 2>/dev/null || true
	ip link del "$VA" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$NA"
ip netns add "$NB"
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$NA"
ip link set "$VB" netns "$NB"
for p in "$NA:$VA" "$NB:$VB"; do
	ns=${p%%:*} l=${p##*:}
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip netns exec "$ns" ip link set lo up
	ip netns exec "$ns" ip link set "$l" up
done
ip netns exec "$NB" ethtool -K "$VB" gro on
go test -c -o "$BIN" ./afpacket/

# The frame every sender sends: to 02:00:00:00:00:02 from ...:01, EtherType
# 0x88b5, zero payload, 64 bytes (FCS excluded), as benchFrame builds it.
FRAME='{ 0x02,0,0,0,0,0x02, 0x02,0,0,0,0,0x01, 0x88,0xb5, fill(0, 50) }'

# now: seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
# rate COUNT SECONDS: integer pkts/s.
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%d\n", n / s; else print 0 }'; }

t_trafgen() {
	# cpu(1): only the fork on CPU 1 sends (trafgen pins its forks itself).
	ip netns exec "$NA" timeout -s INT "$SECS" trafgen --no-sock-mem --cpus 2 --dev "$VA" "cpu(1): $FRAME" >"$WORK/tg" 2>&1 || true
	local n t
	n=$(tr '\r' '\n' <"$WORK/tg" | awk '/packets outgoing/ {print $1}')
	t=$(tr '\r' '\n' <"$WORK/tg" | awk '/on CPU1/ {print $1 + $3 / 1e6}')
	rate "${n:-0}" "${t:-0}"
}

bench() { # NS IFACE NAME [BINARY]
	ip netns exec "$1" env PACKETIO_BENCH_IFACE="$2" GOMAXPROCS=1 taskset -c 1 "${4:-$BIN}" -test.run XXX \
		-test.bench "^Benchmark$3\$" -test.benchtime "$SECS"s >"$WORK/bench" 2>&1 || true
	awk '/pkts\/s/ { for (i = 2; i <= NF; i++) if ($i == "pkts/s") v = $(i-1) } END { printf "%d\n", v }' "$WORK/bench"
	awk '/syscalls\/pkt/ { for (i = 2; i <= NF; i++) if ($i == "syscalls/pkt") v = $(i-1) } END { print v == "" ? "-" : v }' "$WORK/bench" >"$WORK/spp"
	awk '/cpu-ns\/pkt/ { for (i = 2; i <= NF; i++) if ($i == "cpu-ns/pkt") v = $(i-1) } END { printf "%d\n", v }' "$WORK/bench" >"$WORK/cpp"
}

feed() { # start the in-kernel feeder in A on CPU 0; unfeed stops it
	ip netns exec "$NA" env PACKETIO_FEED_IFACE="$VA" PACKETIO_FEED_SECONDS=$((3 * SECS + 20)) \
		"$BIN" -test.run '^TestTrafficgenFeed$' -test.v >"$WORK/feed" 2>&1 &
	PIDS+=($!)
	sleep 1.5
}
# The feeder holds nothing that outlives it (the program is run, never
# attached), so SIGTERM is a clean stop (SIGINT is ignored in a background
# job of a script).
unfeed() { kill -TERM "${PIDS[-1]}" 2>/dev/null || true; wait "${PIDS[-1]}" || true; unset 'PIDS[-1]'; }

r_netsniff() {
	feed
	# Its default ring is sized by the RAM (2.4 GB here, 64 KiB blocks)
	# and takes seconds to set up under load: 64 MiB (8 times ours) keeps
	# its 64 KiB blocks, 100 ms block timeout and reading loop. It times
	# itself from its first read.
	ip netns exec "$NB" timeout -s INT $((SECS + 1)) taskset -c 1 /usr/bin/time -o "$WORK/cpu" -f '%U %S' \
		netsniff-ng --ring-size 64MiB --in "$VB" --out /dev/null --silent >"$WORK/ns" 2>&1 || true
	unfeed
	local n t
	# "incoming" is what it read; "passed filter" is what the kernel put
	# in its ring, read or not.
	n=$(tr '\r' '\n' <"$WORK/ns" | awk '/packets incoming/ {print $1}')
	t=$(tr '\r' '\n' <"$WORK/ns" | awk '/in total/ {print $1 + $3 / 1e6}')
	cpuns "${n:-0}" >"$WORK/cpp"
	rate "${n:-0}" "${t:-0}"
}

# cpuns COUNT: CPU ns per packet from /usr/bin/time's "%U %S" in $WORK/cpu.
cpuns() { awk -v n="$1" '{ if (n > 0) printf "%d\n", ($1 + $2) * 1e9 / n; else print 0 }' "$WORK/cpu"; }

r_tcpdump() {
	feed
	local s e n
	s=$(now)
	ip netns exec "$NB" timeout -s INT "$SECS" taskset -c 1 /usr/bin/time -o "$WORK/cpu" -f '%U %S' \
		tcpdump -q -i "$VB" -w /dev/null >"$WORK/td" 2>&1 || true
	e=$(now)
	unfeed
	n=$(awk '/packets captured/ {print $1}' "$WORK/td")
	[ -n "$n" ] || tail -3 "$WORK/td" >&2
	cpuns "${n:-0}" >"$WORK/cpp"
	rate "${n:-0}" "$(echo "$e - $s" | bc -l)"
}

r_afpacket() { # [BINARY]
	feed
	bench "$NB" "$VB" Receive "${1:-}"
	unfeed
}

# stats: "median min-max" of the numbers on stdin.
stats() { sort -n | awk '{a[NR]=$1} END {printf "%9d  %9d-%-9d", a[int((NR+1)/2)], a[1], a[NR]}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

declare -a TG TA RN RT RA TS RS TR RR CN CT CA
for rep in $(seq "$REPS"); do
	TG+=("$(t_trafgen)")
	TA+=("$(bench "$NA" "$VA" Transmit)")
	TS+=("$(cat "$WORK/spp")")
	[ -z "${REF_BIN:-}" ] || TR+=("$(bench "$NA" "$VA" Transmit "$REF_BIN")")
	if [ -n "${TX_ONLY:-}" ]; then
		RN+=(0) RT+=(0) RA+=(0) RS+=(-) RR+=(0) CN+=(0) CT+=(0) CA+=(0)
	else
		RN+=("$(r_netsniff)")
		CN+=("$(cat "$WORK/cpp")")
		RT+=("$(r_tcpdump)")
		CT+=("$(cat "$WORK/cpp")")
		RA+=("$(r_afpacket)")
		RS+=("$(cat "$WORK/spp")")
		CA+=("$(cat "$WORK/cpp")")
		[ -z "${REF_BIN:-}" ] || RR+=("$(r_afpacket "$REF_BIN")")
	fi
	echo "rep $rep: tx trafgen ${TG[-1]} afpacket ${TA[-1]} (${TS[-1]} syscalls/pkt)${REF_BIN:+ ref ${TR[-1]}} | rx netsniff-ng ${RN[-1]} (${CN[-1]} cpu-ns/pkt) tcpdump ${RT[-1]} (${CT[-1]}) afpacket ${RA[-1]} (${CA[-1]}, ${RS[-1]} syscalls/pkt)${REF_BIN:+ ref ${RR[-1]}}"
done
echo "$REPS interleaved repetitions of ${SECS}s, 64-byte frames, pkts/s: median  min-max; load: $(uptime | sed 's/.*load/load/')"
printf '  transmit  trafgen     %s\n' "$(printf '%s\n' "${TG[@]}" | stats)"
printf '  transmit  afpacket    %s  ratio to trafgen %s\n' "$(printf '%s\n' "${TA[@]}" | stats)" \
	"$(ratio "$(printf '%s\n' "${TA[@]}" | median)" "$(printf '%s\n' "${TG[@]}" | median)")"
if [ -n "${REF_BIN:-}" ]; then
	printf '  transmit  afpacket-ref %s ratio to trafgen %s\n' "$(printf '%s\n' "${TR[@]}" | stats)" \
		"$(ratio "$(printf '%s\n' "${TR[@]}" | median)" "$(printf '%s\n' "${TG[@]}" | median)")"
fi
printf '  receive   netsniff-ng %s\n' "$(printf '%s\n' "${RN[@]}" | stats)"
printf '  receive   tcpdump     %s\n' "$(printf '%s\n' "${RT[@]}" | stats)"
printf '  receive   afpacket    %s  ratio to netsniff-ng %s, to tcpdump %s\n' "$(printf '%s\n' "${RA[@]}" | stats)" \
	"$(ratio "$(printf '%s\n' "${RA[@]}" | median)" "$(printf '%s\n' "${RN[@]}" | median)")" \
	"$(ratio "$(printf '%s\n' "${RA[@]}" | median)" "$(printf '%s\n' "${RT[@]}" | median)")"
printf '  receive CPU per packet (ns, lower is better): netsniff-ng %s  tcpdump %s  afpacket %s\n' \
	"$(printf '%s\n' "${CN[@]}" | stats)" "$(printf '%s\n' "${CT[@]}" | stats)" "$(printf '%s\n' "${CA[@]}" | stats)"
if [ -n "${REF_BIN:-}" ]; then
	printf '  receive   afpacket-ref %s ratio to netsniff-ng %s, to tcpdump %s\n' "$(printf '%s\n' "${RR[@]}" | stats)" \
		"$(ratio "$(printf '%s\n' "${RR[@]}" | median)" "$(printf '%s\n' "${RN[@]}" | median)")" \
		"$(ratio "$(printf '%s\n' "${RR[@]}" | median)" "$(printf '%s\n' "${RT[@]}" | median)")"
fi
