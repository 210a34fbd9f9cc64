#!/bin/sh
# update.sh rebuilds this copy of gVisor from the Go module cache: the
# packages the netstack module needs, at the pinned version, with the
# patches in patches/ applied in name order. Run it from anywhere; it
# changes nothing outside this directory. The copy is upstream plus
# exactly the diffs in patches/: `./update.sh -pristine` rebuilds it
# without them, and `git diff` then shows them reversed.
#
# To move to another gVisor version: change VERSION, run this script,
# fix any patch that no longer applies, and check PACKAGES against
#   cd netstack && go list -deps -test ./... | grep ^gvisor.dev
# (plus pkg/tcpip/link/channel, which the stall test drives).
set -eu

VERSION=v0.0.0-20260905035102-160fafc42237

PACKAGES="
pkg/atomicbitops
pkg/bits
pkg/buffer
pkg/context
pkg/cpuid
pkg/gohacks
pkg/goid
pkg/linewriter
pkg/log
pkg/rand
pkg/refs
pkg/sleep
pkg/state
pkg/state/wire
pkg/sync
pkg/sync/locking
pkg/tcpip
pkg/tcpip/adapters/gonet
pkg/tcpip/checksum
pkg/tcpip/hash/jenkins
pkg/tcpip/header
pkg/tcpip/header/parse
pkg/tcpip/internal/tcp
pkg/tcpip/link/channel
pkg/tcpip/network/arp
pkg/tcpip/network/hash
pkg/tcpip/network/internal/fragmentation
pkg/tcpip/network/internal/ip
pkg/tcpip/network/internal/multicast
pkg/tcpip/network/ipv4
pkg/tcpip/network/ipv6
pkg/tcpip/ports
pkg/tcpip/seqnum
pkg/tcpip/stack
pkg/tcpip/stack/gro
pkg/tcpip/transport
pkg/tcpip/transport/internal/network
pkg/tcpip/transport/internal/noop
pkg/tcpip/transport/packet
pkg/tcpip/transport/raw
pkg/tcpip/transport/tcp
pkg/tcpip/transport/tcpconntrack
pkg/tcpip/transport/udp
pkg/waiter
"

here=$(cd "$(dirname "$0")" && pwd)
pristine=0
if [ "${1:-}" = "-pristine" ]; then
	pristine=1
fi

src="$(go env GOMODCACHE)/gvisor.dev/gvisor@$VERSION"
if [ ! -d "$src" ]; then
	(cd "$here" && go mod download "gvisor.dev/gvisor@$VERSION")
fi

rm -rf "$here/pkg" "$here/go.mod" "$here/LICENSE"
cp "$src/LICENSE" "$src/go.mod" "$here/"
for p in $PACKAGES; do
	mkdir -p "$here/$p"
	for f in "$src/$p"/*; do
		[ -f "$f" ] || continue
		case "$f" in
		*_test.go | */BUILD) continue ;;
		*.go | *.s) cp "$f" "$here/$p/" ;;
		esac
	done
done
chmod -R u+w "$here/pkg" "$here/go.mod" "$here/LICENSE"

if [ "$pristine" = 0 ]; then
	for p in "$here"/patches/*.patch; do
		[ -f "$p" ] || continue
		echo "applying $(basename "$p")"
		patch -s -p1 --no-backup-if-mismatch -d "$here" <"$p"
	done
fi
