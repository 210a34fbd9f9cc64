package live

import (
	"net"
	"net/netip"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"

	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/testbed"
)

// NewUDPFeeder is NewFeeder for the frame drop and capture feed themselves
// with: 60-byte UDP frames from the peer to the example's MAC, for dst:port
// (an address nobody owns, so the peer's kernel only counts them), on 64
// flows (source ports), one generator per queue on the allowed CPUs in turn
// (a veth picks the receive queue by the sending CPU).
func NewUDPFeeder(bed *testbed.Bed, dst netip.Addr, port uint16, queues int, nativeXDP bool) (*Feeder, error) {
	mac, err := bed.MAC()
	if err != nil {
		return nil, err
	}
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0x70, 0x69, 0x6f, 0, 2}, DstMAC: mac,
		SrcIP: testbed.AddrB.Addr(), DstIP: dst, SrcPort: 1024, DstPort: port, Size: 60}
	buf := make([]byte, spec.Len())
	frame.Build(buf, spec)
	allowed, err := cpus.Allowed()
	if err != nil {
		return nil, err
	}
	gens := make([]int, queues)
	for q := range gens {
		gens[q] = allowed[q%len(allowed)]
	}
	return NewFeeder(bed, buf, Flows{Offset: spec.HeaderLen() - 8, N: 64}, gens, nativeXDP)
}

// NativeXDP reports whether d runs a native XDP program on its interface,
// which makes a veth take XDP frames without GRO (NewFeeder's nativeXDP).
func NativeXDP(d packetio.Device) bool {
	x, ok := d.(*afxdp.Device)
	return ok && x.Info().Mode == "native"
}
