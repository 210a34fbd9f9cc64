#!/bin/bash
# testpmd-compare.sh: afxdp/xdp against dpdk-testpmd over net_af_xdp on one
# veth pair, 64-byte frames, one queue, median of RUNS runs. Run as root
# from the module root: afxdp/scripts/testpmd-compare.sh [RUNS] [SECONDS]
#
# It makes two named namespaces and a veth pair of its own (pxA<pid>,
# pxB<pid>, pxa<pid>/pxb<pid>) and deletes them on exit, whatever happens.
#   tx: a sender in A alone: testpmd txonly, or BenchmarkTransmit.
#   rx: the live-frames feeder (BenchmarkFeed: BPF_PROG_RUN, XDP_TX) in A
#       floods; the receiver in B counts: testpmd rxonly, or BenchmarkReceive
#       blocking in poll and busy-polling. Every receiver gets the same
#       feeder, and each attaches a native XDP program, which the feeder's
#       XDP_TX needs on a veth peer.
# Every measured loop runs on CPU 1 (testpmd's forwarding lcore, our
# worker through WithAffinity); the feeder, and with it the kernel's half
# of receiving, runs on CPU 0.
set -euo pipefail
RUNS=${1:-3}
SECS=${2:-6}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd missing (apt-get install dpdk)" >&2; exit 1; }

ID=$$
NA=pxA$ID NB=pxB$ID VA=pxa$ID VB=pxb$ID
WORK=$(mktemp -d /tmp/pio-xcmp.XXXXXX)
BIN=$WORK/xdp.test
PIDS=()
HAD_RUNDIR=0; [ -d /var/run/dpdk ] && HAD_RUNDIR=1
cleanup() {
	for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	sleep 0.5
	rm -rf /var/run/dpdk/px"$ID"*
	[ "$HAD_RUNDIR" = 1 ] || rmdir /var/run/dpdk 2>/dev/null || true
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
go test -c -o "$BIN" ./afxdp/xdp/

# testpmd NS IFACE MODE MAIN_LCORE FWD_LCORE SECONDS -> stats on stdout
testpmd() {
	ip netns exec "$1" timeout -s INT "$6" dpdk-testpmd -l "$4,$5" --main-lcore "$4" \
		--no-huge -m 256 --no-pci --no-shconf --file-prefix "px$ID$3" --no-telemetry \
		--vdev=net_af_xdp0,iface="$2" -- --forward-mode="$3" --stats-period 1 \
		--total-num-mbufs=16384 --txpkts=64 2>&1 || true
}

# pps FIELD: median of the per-second "FIELD-pps:" values, first two dropped.
pps() {
	grep -o "$1-pps: *[0-9]*" | awk '{print $2}' | tail -n +3 | sort -n |
		awk '{a[NR]=$1} END {if (NR == 0) print 0; else print a[int((NR+1)/2)]}'
}

bench() { # NS IFACE NAME BENCHTIME [env...]
	local ns=$1 iface=$2 name=$3 bt=$4
	shift 4
	ip netns exec "$ns" env PACKETIO_BENCH_IFACE="$iface" "$@" "$BIN" -test.run XXX \
		-test.bench "^Benchmark$name\$" -test.benchtime "$bt" 2>&1 |
		grep -o '[0-9.]* Mpps' | tail -1 | awk '{printf "%d\n", $1*1e6}'
}

feed() { # DELAY SECONDS: after DELAY, about SECONDS at ~4 Mpps, in the background
	(
		sleep "$1"
		exec ip netns exec "$NA" env PACKETIO_BENCH_IFACE="$VA" "$BIN" -test.run XXX \
			-test.bench '^BenchmarkFeed$' -test.benchtime "$(($2 * 4000000))"x
	) >"$WORK/feed" 2>&1 &
	PIDS+=($!)
}

stopfeed() {
	kill -INT "${PIDS[-1]}" 2>/dev/null || true
	wait "${PIDS[-1]}" 2>/dev/null || true
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -a T_PMD T_PIO R_PMD R_PIO R_BUSY
for run in $(seq "$RUNS"); do
	testpmd "$NA" "$VA" txonly 0 1 "$SECS" >"$WORK/tx"
	T_PMD+=("$(pps Tx <"$WORK/tx")")
	[ "${T_PMD[-1]}" != 0 ] || { echo "testpmd txonly measured nothing:" >&2; tail -20 "$WORK/tx" >&2; }
	T_PIO+=("$(bench "$NA" "$VA" Transmit "$SECS"s)")

	# testpmd attaches first; the feeder starts once its program is on.
	testpmd "$NB" "$VB" rxonly 0 1 $((SECS + 3)) >"$WORK/rx" &
	PIDS+=($!)
	rxpid=$!
	feed 2 $((SECS * 3))
	wait "$rxpid" || true
	stopfeed
	R_PMD+=("$(pps Rx <"$WORK/rx")")

	# Ours: the benchmark attaches, the feeder follows a moment later.
	# A fixed count (a time-based benchmark would first run b.N=1 before
	# the feeder starts); the feeder offers three times as much.
	feed 1 $((SECS * 3))
	R_PIO+=("$(bench "$NB" "$VB" Receive $((SECS * 2000000))x)")
	stopfeed
	feed 1 $((SECS * 3))
	R_BUSY+=("$(bench "$NB" "$VB" Receive $((SECS * 2000000))x PACKETIO_BENCH_BUSY=1)")
	stopfeed
	echo "run $run: tx testpmd ${T_PMD[-1]} xdp ${T_PIO[-1]} | rx testpmd ${R_PMD[-1]} xdp ${R_PIO[-1]} xdp-busy ${R_BUSY[-1]}"
done
tp=$(printf '%s\n' "${T_PMD[@]}" | median)
ta=$(printf '%s\n' "${T_PIO[@]}" | median)
rp=$(printf '%s\n' "${R_PMD[@]}" | median)
ra=$(printf '%s\n' "${R_PIO[@]}" | median)
rb=$(printf '%s\n' "${R_BUSY[@]}" | median)
echo "median of $RUNS, 64-byte frames, one queue, pkts/s:"
printf '  transmit: testpmd txonly %9d   afxdp/xdp %9d   ratio %.2f\n' "$tp" "$ta" "$(echo "$ta/$tp" | bc -l)"
printf '  receive:  testpmd rxonly %9d   afxdp/xdp %9d   ratio %.2f (poll)\n' "$rp" "$ra" "$(echo "$ra/$rp" | bc -l)"
printf '                                       afxdp/xdp %9d   ratio %.2f (busy)\n' "$rb" "$(echo "$rb/$rp" | bc -l)"
