package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/pkt"
	"github.com/packetio/packetio/examples/xdp/customfilter/internal/frames"
)

// demoFrame is one frame of the demonstration and whether the filter must
// take it.
type demoFrame struct {
	name  string
	frame []byte
	want  bool
}

// demoResult is what the demonstration saw.
type demoResult struct {
	hits, misses int // frames sent that must match, and near misses
	taken        int // frames the fleet took
	wrong        int // near misses among them
	unknown      int // frames it took that were never sent
	absent       int // frames that must match and never came
}

// demo opens the fleet on a, sends the demonstration frames from b, and
// checks that exactly the frames the match must take arrived, byte for
// byte.
func demo(ctx context.Context, o options, a, b bed.Port, w io.Writer) error {
	res, err := runDemo(ctx, o, a, b, w)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "sent %d frames the match must take and %d near misses; it took %d\n", res.hits, res.misses, res.taken)
	if res.wrong+res.unknown+res.absent > 0 {
		return fmt.Errorf("%d near miss(es) taken, %d frame(s) to take that never came, %d frame(s) nobody sent", res.wrong, res.absent, res.unknown)
	}
	fmt.Fprintln(w, "every frame went where it should")
	return nil
}

func runDemo(ctx context.Context, o options, a, b bed.Port, w io.Writer) (demoResult, error) {
	var res demoResult
	m, err := matchFor(o, &a)
	if err != nil {
		return res, err
	}
	hw, err := hardwareAddr(a)
	if err != nil {
		return res, err
	}
	set, err := demoFrames(o, hw)
	if err != nil {
		return res, err
	}
	fleet, err := open(a, m, w)
	if err != nil {
		return res, err
	}
	defer fleet.Close()
	raw, err := bed.OpenRaw(b)
	if err != nil {
		return res, err
	}
	defer raw.Close()

	var (
		mu  sync.Mutex
		got [][]byte
	)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := receive(rctx, fleet, 0, w, func(f []byte) {
			mu.Lock()
			got = append(got, f)
			mu.Unlock()
		})
		done <- err
	}()

	fmt.Fprintf(w, "sending from %s, through filter %s:\n", b.Name, m)
	for _, f := range set {
		verdict := "near miss"
		if f.want {
			verdict = "must match"
			res.hits++
		} else {
			res.misses++
		}
		fmt.Fprintf(w, "  %-10s %s\n", verdict, f.name)
		if err := raw.Send(f.frame); err != nil {
			return res, err
		}
	}
	// Wait for the frames to take, then a little longer for any near
	// miss that would wrongly follow them.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= res.hits {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	stop()
	if err := <-done; err != nil {
		return res, err
	}

	mu.Lock()
	defer mu.Unlock()
	res.taken = len(got)
	arrived := make([]bool, len(set))
	fmt.Fprintln(w, "what the filter took:")
	for _, g := range got {
		i := find(set, g)
		switch {
		case i < 0:
			res.unknown++
			fmt.Fprintf(w, "  WRONG: a frame that was never sent\n         %s\n", pkt.Describe(g))
		case !set[i].want:
			res.wrong++
			fmt.Fprintf(w, "  WRONG: %s, a near miss\n         %s\n", set[i].name, pkt.Describe(g))
		default:
			arrived[i] = true
			fmt.Fprintf(w, "  ok     %s\n         %s\n", set[i].name, pkt.Describe(g))
		}
	}
	for i, f := range set {
		if f.want && !arrived[i] {
			res.absent++
			fmt.Fprintf(w, "  WRONG: %s never came\n", f.name)
		}
	}
	return res, nil
}

func find(set []demoFrame, f []byte) int {
	for i, d := range set {
		if bytes.Equal(d.frame, f) {
			return i
		}
	}
	return -1
}

// demoFrames is the demonstration for the options' match: frames it must
// take and near misses, every frame distinct. own is the address of the
// interface the fleet is on.
func demoFrames(o options, own net.HardwareAddr) ([]demoFrame, error) {
	var (
		set  []demoFrame
		ferr error
	)
	add := func(name string, want bool) func([]byte, error) {
		return func(b []byte, err error) {
			if err != nil {
				ferr = err
				return
			}
			if find(set, b) >= 0 {
				return // e.g. a byte-swapped value equal to itself
			}
			set = append(set, demoFrame{name: name, frame: b, want: want})
		}
	}
	udp := func(s frames.Spec) ([]byte, error) { return frames.UDP(s, 9, []byte("customfilter demo")) }
	switch o.match {
	case "vlan":
		id := uint16(o.vlan)
		swapped := (id>>8 | id<<8) & 0x0fff
		add(fmt.Sprintf("UDP tagged %d", id), true)(udp(frames.Spec{VLAN: []uint16{id}}))
		add(fmt.Sprintf("IPv6 UDP tagged %d", id), true)(udp(frames.Spec{V6: true, VLAN: []uint16{id}}))
		add("UDP, untagged", false)(udp(frames.Spec{}))
		add(fmt.Sprintf("UDP tagged %d", (id+1)&0x0fff), false)(udp(frames.Spec{VLAN: []uint16{(id + 1) & 0x0fff}}))
		add(fmt.Sprintf("UDP tagged %d (the ID byte-swapped)", swapped), false)(udp(frames.Spec{VLAN: []uint16{swapped}}))
	case "dstmac":
		mac := own
		if o.mac != "" {
			mac, _ = net.ParseMAC(o.mac)
		}
		rev := net.HardwareAddr{mac[5], mac[4], mac[3], mac[2], mac[1], mac[0]}
		last := append(net.HardwareAddr(nil), mac...)
		last[5] ^= 1
		to := func(d net.HardwareAddr) ([]byte, error) {
			b, err := udp(frames.Spec{})
			if err != nil {
				return nil, err
			}
			return frames.WithDst(b, d), nil
		}
		add("UDP to "+mac.String(), true)(to(mac))
		add("UDP to "+rev.String()+" (reversed)", false)(to(rev))
		add("UDP to "+last.String(), false)(to(last))
		add("UDP to broadcast", false)(to(net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))
	case "tcpsyn":
		port, other := uint16(443), uint16(0)
		if o.ports != "" {
			p, _ := strconv.ParseUint(strings.Split(o.ports, ",")[0], 10, 16)
			port, other = uint16(p), uint16(p)+1
		}
		add(fmt.Sprintf("SYN to %d", port), true)(frames.TCP(frames.Spec{}, port, "S"))
		add(fmt.Sprintf("SYN to %d, IPv6", port), true)(frames.TCP(frames.Spec{V6: true}, port, "S"))
		add(fmt.Sprintf("SYN to %d behind IPv4 options", port), true)(frames.TCP(frames.Spec{IPOpts: true}, port, "S"))
		add(fmt.Sprintf("SYN-ACK to %d", port), false)(frames.TCP(frames.Spec{}, port, "SA"))
		add(fmt.Sprintf("ACK to %d", port), false)(frames.TCP(frames.Spec{}, port, "A"))
		add(fmt.Sprintf("RST to %d", port), false)(frames.TCP(frames.Spec{}, port, "R"))
		if other != 0 {
			add(fmt.Sprintf("SYN to %d", other), false)(frames.TCP(frames.Spec{}, other, "S"))
		}
	case "vxlan":
		v, _ := strconv.ParseUint(o.vni, 0, 32)
		vni := uint32(v)
		swapped := vni>>16 | vni&0xff00 | (vni&0xff)<<16
		add(fmt.Sprintf("VXLAN VNI %#06x", vni), true)(frames.VXLAN(frames.Spec{VNI: vni}))
		add(fmt.Sprintf("VXLAN VNI %#06x over IPv6", vni), true)(frames.VXLAN(frames.Spec{VNI: vni, V6: true}))
		add(fmt.Sprintf("VXLAN VNI %#06x, tagged", vni), true)(frames.VXLAN(frames.Spec{VNI: vni, VLAN: []uint16{30}}))
		add(fmt.Sprintf("VXLAN VNI %#06x (byte-swapped)", swapped), false)(frames.VXLAN(frames.Spec{VNI: swapped}))
		add(fmt.Sprintf("VXLAN VNI %#06x", (vni+1)&0xffffff), false)(frames.VXLAN(frames.Spec{VNI: (vni + 1) & 0xffffff}))
		add(fmt.Sprintf("VXLAN VNI %#06x on UDP 4790", vni), false)(frames.VXLAN(frames.Spec{VNI: vni, DPort: 4790}))
		add(fmt.Sprintf("VXLAN VNI %#06x without the I flag", vni), false)(frames.VXLAN(frames.Spec{VNI: vni, NoIFlag: true}))
		add(fmt.Sprintf("VNI %#06x over TCP 4789", vni), false)(frames.VXLAN(frames.Spec{VNI: vni, Proto: layers.IPProtocolTCP}))
	case "gre":
		v, _ := strconv.ParseUint(o.proto, 0, 16)
		p := uint16(v)
		other := uint16(0x0800)
		if p == other {
			other = 0x6558
		}
		add(fmt.Sprintf("GRE carrying %#04x", p), true)(frames.GRE(frames.Spec{GREProto: p}))
		add(fmt.Sprintf("GRE carrying %#04x, with a key", p), true)(frames.GRE(frames.Spec{GREProto: p, GREKey: true}))
		add(fmt.Sprintf("GRE carrying %#04x", other), false)(frames.GRE(frames.Spec{GREProto: other}))
		add(fmt.Sprintf("GRE carrying %#04x (byte-swapped)", p>>8|p<<8), false)(frames.GRE(frames.Spec{GREProto: p>>8 | p<<8}))
		add(fmt.Sprintf("GRE carrying %#04x over IPv6", p), false)(frames.GRE(frames.Spec{GREProto: p, V6: true}))
		add(fmt.Sprintf("GRE carrying %#04x, version 1", p), false)(frames.GRE(frames.Spec{GREProto: p, GREVersion: 1}))
	default:
		return nil, fmt.Errorf("-match %q: one of %s", o.match, strings.Join(kinds, ", "))
	}
	if ferr != nil {
		return nil, fmt.Errorf("build the demonstration frames: %w", ferr)
	}
	return set, nil
}
