package trafficgen_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/trafficgen"
)

// counter attaches an XDP program that counts and drops every frame to h's
// interface (native, so its veth takes XDP frames) and returns a reader of
// the count.
func counter(t *testing.T, h *netns.Host) func() uint64 {
	t.Helper()
	_ = rlimit.RemoveMemlock()
	cnt, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnt.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, cnt.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"), // XDP_DROP
		asm.Return(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	if err := h.Do(func() error {
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: h.Index, Flags: link.XDPDriverMode})
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return func() uint64 {
		var vs []uint64
		if err := cnt.Lookup(uint32(0), &vs); err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, v := range vs {
			n += v
		}
		return n
	}
}

// TestCircuitFeedsAReceiver: a circuit on A feeds B's XDP program, flat
// out and then at a rate; what B counts is what the circuit says it sent
// (none lost on the way), the rate is a ceiling, and Close leaves A's
// namespace as it found it.
func TestCircuitFeedsAReceiver(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	got := counter(t, p.B)
	var c *trafficgen.Circuit
	if err := p.A.Do(func() (err error) {
		c, err = trafficgen.NewCircuit(p.A.Link, frame(), trafficgen.WithFlows(14, 16), trafficgen.WithCPU(0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, rate := range []float64{0, 100000} {
		stop := make(chan struct{})
		done := make(chan error, 1)
		before, sent0 := got(), c.Sent()
		start := time.Now()
		go func() { done <- c.Run(stop, rate) }()
		time.Sleep(time.Second)
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		time.Sleep(50 * time.Millisecond)
		n, sent := got()-before, c.Sent()-sent0
		t.Logf("rate %v: %d frames in %v (%.3f Mpps), sent %d", rate, n, took, float64(n)/took.Seconds()/1e6, sent)
		if n == 0 || n != sent {
			t.Errorf("rate %v: B counted %d, the circuit sent %d", rate, n, sent)
		}
		if rate > 0 && float64(n) > rate*took.Seconds()+1000 {
			t.Errorf("rate %v: %d frames in %v", rate, n, took)
		}
		// Stopped means stopped: nothing more arrives.
		after := got()
		time.Sleep(100 * time.Millisecond)
		if late := got() - after; late != 0 {
			t.Errorf("rate %v: %d frames arrived in the 100 ms after Run returned", rate, late)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.A.Do(func() error {
		links, err := net.Interfaces()
		for _, l := range links {
			if strings.HasPrefix(l.Name, "piog") {
				t.Errorf("the circuit's %s is still there after Close", l.Name)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCircuitFullSizeFrames: a circuit takes a frame as long as its pair's
// MTU lets through (1514 bytes) and feeds it whole, every copy counted;
// one byte more is refused, naming the limit, before anything is made.
func TestCircuitFullSizeFrames(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	got := counter(t, p.B)
	long := append(frame(), make([]byte, 1514-len(frame()))...)
	if err := p.A.Do(func() error {
		_, err := trafficgen.NewCircuit(p.A.Link, append(long, 0))
		if err == nil || !strings.Contains(err.Error(), "a 1515-byte frame: need 14 to 1514 bytes") {
			t.Errorf("a 1515-byte frame: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var c *trafficgen.Circuit
	if err := p.A.Do(func() (err error) {
		c, err = trafficgen.NewCircuit(p.A.Link, long, trafficgen.WithCPU(0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- c.Run(stop, 0) }()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n, sent := got(), c.Sent(); n == 0 || n != sent {
		t.Errorf("B counted %d 1514-byte frames, the circuit sent %d", n, sent)
	}
}
