//go:build linux

package netstack

import (
	"fmt"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/netstack/afxdpsteer"
)

// Addressing on afxdp: the kernel keeps A's interface and its address
// 10.9.0.1 (and IPv6 on it) while the device is open; it sees every frame
// the XDP program does not steer. The stack could share that address, with
// only its own ports steered, but then it shares the kernel's port space
// (a kernel socket on the stack's port, or a kernel connection on one of
// the stack's ephemeral ports, breaks one of them), every segment the
// steering misses is answered by the kernel with a reset, and the stack
// cannot resolve its neighbours: the ARP replies to 10.9.0.1 go to the
// kernel, and steering them to the stack would take the kernel's ARP away.
//
// So the stack uses the same spare addresses as on afpacket, 10.9.0.3 and
// fd09::3, which no kernel owns, with A's MAC. Steered to it (package
// afxdpsteer) is exactly what each subtest needs: TCP to port 7 on the
// stack's addresses (the server), TCP from the kernel listener's address
// and port (the stack dialling it), UDP to port 53, and, for address
// resolution, ARP whose target is 10.9.0.3 and neighbour solicitations and
// advertisements to fd09::3 or its solicited-node group. Everything else,
// A's own ARP and neighbour discovery included, stays with A's kernel, and
// whatever to the stack's addresses the steering leaves is dropped by it
// (the address is not its own), not answered.
//
// B's transmit checksum offload is off: over a veth the kernel leaves a
// TCP or UDP checksum for the "hardware" to finish, and an AF_XDP socket
// hands over the frame without saying so (it has no offload metadata on
// receive), so the stack would drop it as corrupt. A NIC puts finished
// checksums on the wire. The stack's own checksums are left to the device
// (WithTxChecksumOffload, checksum-only offload: the kernel finishes them
// in copy mode) and B's kernel verifies every one (checkKernelClean).

// afxdpOpen opens A's end through AF_XDP, steering to the stack exactly
// what the subtest needs, and checks that the attach mode is the one asked
// for (a native attach that fell back to generic would test the wrong
// path).
func afxdpOpen(mode string, opts ...afxdp.Option) func(*netns.Host, afxdpsteer.Traffic) (packetio.Device, error) {
	return func(h *netns.Host, need afxdpsteer.Traffic) (packetio.Device, error) {
		steer, err := need.Options()
		if err != nil {
			return nil, err
		}
		xo := xdp.WithDriverMode()
		if mode == "generic" {
			xo = xdp.WithGenericMode()
		}
		all := append(steer, afxdp.WithXDP(xo), afxdp.WithFrames(4096))
		d, err := afxdp.Open(h.Link, append(all, opts...)...)
		if err != nil {
			return nil, err
		}
		if got := d.Info().Mode; got != mode {
			d.Close()
			return nil, fmt.Errorf("afxdp attached in %s mode, want %s", got, mode)
		}
		return d, nil
	}
}

func init() {
	need := func(t *testing.T) { testenv.NeedBPF(t) }
	vethModes = append(vethModes,
		vethMode{
			name:        "afxdp-native-csum",
			need:        need,
			peerTxOff:   true,
			open:        afxdpOpen("native", afxdp.WithTxChecksumOffload()),
			csumOffload: true,
		},
		vethMode{
			name:      "afxdp-native",
			need:      need,
			open:      afxdpOpen("native"),
			peerTxOff: true,
		},
		vethMode{
			// Two queues each way: flows spread over the sockets
			// of both queues, one region shared by both.
			name:        "afxdp-native-csum-2-queues",
			need:        need,
			peerTxOff:   true,
			open:        afxdpOpen("native", afxdp.WithTxChecksumOffload()),
			queues:      2,
			csumOffload: true,
		},
		vethMode{
			// Everything to the stack's addresses, as a stack that
			// dials peers unknown at open would be steered.
			name:      "afxdp-native-anyport",
			need:      need,
			peerTxOff: true,
			open: func(h *netns.Host, t afxdpsteer.Traffic) (packetio.Device, error) {
				t.AnyPort = true
				return afxdpOpen("native", afxdp.WithTxChecksumOffload())(h, t)
			},
			csumOffload: true,
		},
		vethMode{
			// MTU 9000 over 4 KiB frames: every full-sized packet
			// is a chain of three frames, both ways.
			name:        "afxdp-native-jumbo-csum",
			need:        need,
			peerTxOff:   true,
			open:        afxdpOpen("native", afxdp.WithTxChecksumOffload(), afxdp.WithMultiBuffer(), afxdp.WithFrameSize(4096)),
			csumOffload: true,
			mtu:         9000,
		},
		vethMode{
			// The same with the checksums summed here, frame by
			// frame of each chain.
			name:      "afxdp-native-jumbo",
			need:      need,
			peerTxOff: true,
			open:      afxdpOpen("native", afxdp.WithMultiBuffer(), afxdp.WithFrameSize(4096)),
			mtu:       9000,
		},
		vethMode{
			name:        "afxdp-generic-csum",
			need:        need,
			peerTxOff:   true,
			open:        afxdpOpen("generic", afxdp.WithTxChecksumOffload()),
			csumOffload: true,
		},
	)
}
