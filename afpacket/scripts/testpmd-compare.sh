#!/bin/bash
# testpmd-compare.sh: afpacket against dpdk-testpmd (net_af_packet) on one
# veth pair, 64-byte frames, median of RUNS runs. Run as root from the module
# root: afpacket/scripts/testpmd-compare.sh [RUNS] [SECONDS]
#
# It makes two named namespaces and a veth pair of its own (pioA<pid>,
# pioB<pid>, pta<pid>/ptb<pid>) and deletes them on exit, whatever happens.
#   tx:  a sender in A alone (testpmd txonly, or BenchmarkTransmit).
#   rx:  testpmd txonly in A floods; the receiver in B counts (testpmd rxonly,
#        or BenchmarkReceive). Both receivers get the same feeder.
set -euo pipefail
RUNS=${1:-3}
SECS=${2:-6}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd missing (apt-get install dpdk)" >&2; exit 1; }

ID=$$
NA=pioA$ID NB=pioB$ID VA=pta$ID VB=ptb$ID
WORK=$(mktemp -d /tmp/pio-cmp.XXXXXX)
BIN=$WORK/afpacket.test
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	sleep 0.5
	rm -rf /var/run/dpdk/pio"$ID"* # EAL makes its runtime folder even with --no-shconf
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
go test -c -o "$BIN" ./afpacket/

# testpmd NS IFACE MODE MAIN_LCORE FWD_LCORE SECONDS -> stats on stdout
testpmd() {
	ip netns exec "$1" timeout -s INT "$6" dpdk-testpmd -l "$4,$5" --main-lcore "$4" \
		--no-huge -m 256 --no-pci --no-shconf --file-prefix "pio$ID$3" --no-telemetry \
		--vdev=net_af_packet0,iface="$2" -- --forward-mode="$3" --stats-period 1 \
		--total-num-mbufs=8192 --txpkts=64 2>&1 || true
}

# pps FIELD: median of the per-second "FIELD-pps:" values, first two dropped.
pps() {
	grep -o "$1-pps: *[0-9]*" | awk '{print $2}' | tail -n +3 | sort -n |
		awk '{a[NR]=$1} END {if (NR == 0) print 0; else print a[int((NR+1)/2)]}'
}

bench() { # NS IFACE NAME SECONDS
	ip netns exec "$1" env PACKETIO_BENCH_IFACE="$2" "$BIN" -test.run XXX \
		-test.bench "^Benchmark$3\$" -test.benchtime "$4"s 2>&1 |
		grep -o '[0-9.e+]* pkts/s' | tail -1 | awk '{printf "%d\n", $1}'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -a T_PMD T_PIO R_PMD R_PIO FEED
for run in $(seq "$RUNS"); do
	testpmd "$NA" "$VA" txonly 0 1 "$SECS" >"$WORK/tx"
	T_PMD+=("$(pps Tx <"$WORK/tx")")
	[ "${T_PMD[-1]}" != 0 ] || { echo "testpmd txonly measured nothing:" >&2; tail -20 "$WORK/tx" >&2; }
	T_PIO+=("$(bench "$NA" "$VA" Transmit "$SECS")")

	testpmd "$NA" "$VA" txonly 0 1 $((SECS + 4)) >"$WORK/feed1" &
	PIDS+=($!)
	sleep 2
	R_PMD+=("$(testpmd "$NB" "$VB" rxonly 1 0 "$SECS" | pps Rx)")
	wait "${PIDS[-1]}" || true

	testpmd "$NA" "$VA" txonly 0 1 $((SECS + 6)) >"$WORK/feed2" &
	PIDS+=($!)
	sleep 2
	R_PIO+=("$(bench "$NB" "$VB" Receive "$SECS")")
	wait "${PIDS[-1]}" || true
	FEED+=("$(pps Tx <"$WORK/feed1")/$(pps Tx <"$WORK/feed2")")
	echo "run $run: tx testpmd ${T_PMD[-1]} afpacket ${T_PIO[-1]} | rx testpmd ${R_PMD[-1]} afpacket ${R_PIO[-1]} (feeder pps ${FEED[-1]})"
done
tp=$(printf '%s\n' "${T_PMD[@]}" | median)
ta=$(printf '%s\n' "${T_PIO[@]}" | median)
rp=$(printf '%s\n' "${R_PMD[@]}" | median)
ra=$(printf '%s\n' "${R_PIO[@]}" | median)
echo "median of $RUNS, 64-byte frames, pkts/s:"
printf '  transmit: testpmd txonly %9d   afpacket %9d   ratio %.2f\n' "$tp" "$ta" "$(echo "$ta/$tp" | bc -l)"
printf '  receive:  testpmd rxonly %9d   afpacket %9d   ratio %.2f\n' "$rp" "$ra" "$(echo "$ra/$rp" | bc -l)"
