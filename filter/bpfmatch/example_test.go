package bpfmatch_test

import (
	"errors"
	"fmt"

	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter/bpfmatch"
)

// A program in tcpdump -ddd form (here 'udp dst port 53', IPv4 only)
// becomes a match for the filter program.
func ExampleCompile() {
	insns := []bpf.Instruction{
		bpf.RawInstruction{Op: 0x28, K: 12},                   // ldh [12]
		bpf.RawInstruction{Op: 0x15, Jt: 0, Jf: 8, K: 0x800},  // jeq #0x800
		bpf.RawInstruction{Op: 0x30, K: 23},                   // ldb [23]
		bpf.RawInstruction{Op: 0x15, Jt: 0, Jf: 6, K: 17},     // jeq #17
		bpf.RawInstruction{Op: 0x28, K: 20},                   // ldh [20]
		bpf.RawInstruction{Op: 0x45, Jt: 4, Jf: 0, K: 0x1fff}, // jset #0x1fff
		bpf.RawInstruction{Op: 0xb1, K: 14},                   // ldxb 4*([14]&0xf)
		bpf.RawInstruction{Op: 0x48, K: 16},                   // ldh [x + 16]
		bpf.RawInstruction{Op: 0x15, Jt: 0, Jf: 1, K: 53},     // jeq #53
		bpf.RawInstruction{Op: 0x6, K: 65535},                 // ret #65535
		bpf.RawInstruction{Op: 0x6, K: 0},                     // ret #0
	}
	m, err := bpfmatch.Compile("dns", insns)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m)
	_ = xdp.WithFilter(m) // for xdp.Open or filter.NewClassifier

	// A filter compiled against a live Linux capture handle may read the
	// VLAN tag the kernel stripped into the socket buffer: XDP has none.
	_, err = bpfmatch.Compile("tagged", []bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtVLANTagPresent},
		bpf.RetA{},
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, packetio.ErrUnsupported))
	// Output:
	// dns
	// bpfmatch: tagged: instruction 0 (ld #vlan_avail): loads at offset -4048 (SKF_AD_OFF+48, the ancillary value SKF_AD_VLAN_TAG_PRESENT): a negative offset reads socket-buffer metadata, which XDP does not have
	// true
}
