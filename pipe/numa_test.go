package pipe_test

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/internal/numa/numatest"
	"github.com/packetio/packetio/packetiotest"
	"github.com/packetio/packetio/pipe"
)

// TestNUMANode: WithNUMANode(0) puts both regions on memory bound to node 0
// and says so; the default and -1 leave them on the Go heap with the
// default policy.
func TestNUMANode(t *testing.T) {
	numatest.OnlineNodes(t)
	for _, tc := range []struct {
		name  string
		opts  []pipe.Option
		bound bool
	}{
		{"default", nil, false},
		{"-1", []pipe.Option{pipe.WithNUMANode(-1)}, false},
		{"node 0", []pipe.Option{pipe.WithNUMANode(0)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, err := pipe.New(append(tc.opts, pipe.WithFrames(256))...)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			defer a.Close()
			for _, d := range []packetio.Device{a, b} {
				c := d.Capabilities()
				if c.NUMABound != tc.bound || c.NUMANode != 0 {
					t.Errorf("%v: NUMABound %v, NUMANode %d; want %v, 0", d, c.NUMABound, c.NUMANode, tc.bound)
				}
				mem := d.RxQueue(0).Region().Bytes()
				want := map[bool]string{false: "default", true: "bind=static:0"}[tc.bound]
				for _, off := range []int{0, len(mem) - 1} {
					p, err := numa.PolicyOf(mem[off:])
					if err != nil {
						t.Fatal(err)
					}
					if p.String() != want {
						t.Errorf("%v: region policy at %d %v, want %s", d, off, p, want)
					}
				}
			}
		})
	}
}

// TestNUMANodeClosedRegionReadsZeros: a frame slice kept past Close of a
// bound pipe reads zeros instead of faulting.
func TestNUMANodeClosedRegionReadsZeros(t *testing.T) {
	numatest.OnlineNodes(t)
	a, b, err := pipe.New(pipe.WithNUMANode(0), pipe.WithFrames(64))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mem := a.RxQueue(0).Region().Bytes()
	binary.LittleEndian.PutUint64(mem, 0xfeed)
	a.Close()
	if v := binary.LittleEndian.Uint64(mem); v != 0 {
		t.Fatalf("region after Close reads %#x, want 0", v)
	}
}

func TestNUMANodeRefused(t *testing.T) {
	online := numatest.OnlineNodes(t)
	off := 0
	for _, n := range online {
		if n == off {
			off++
		}
	}
	for _, tc := range []struct {
		node int
		want string
	}{
		{off, "WithNUMANode(" + strconv.Itoa(off) + "): NUMA node " + strconv.Itoa(off) + ": no such NUMA node (online: "},
		{-2, "WithNUMANode(-2), want a node from 0 to 1023"},
		{1024, "WithNUMANode(1024), want a node from 0 to 1023"},
	} {
		_, _, err := pipe.New(pipe.WithNUMANode(tc.node))
		var oe *packetio.OpError
		if !errors.As(err, &oe) || oe.Op != "open" || !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(WithNUMANode(%d)) = %v, want ErrInvalid saying %q", tc.node, err, tc.want)
		}
	}
}

func TestConformNUMANode(t *testing.T) {
	numatest.OnlineNodes(t)
	open, peer := conformPair(pipe.WithNUMANode(0))
	packetiotest.Run(t, open, packetiotest.WithPeer(peer))
}

// FuzzNUMANode: New takes any node number without a panic: it binds to an
// online node or refuses with ErrInvalid naming WithNUMANode.
func FuzzNUMANode(f *testing.F) {
	for _, n := range []int{-1, 0, 1, -2, 1023, 1 << 40} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int) {
		a, b, err := pipe.New(pipe.WithNUMANode(n), pipe.WithFrames(16), pipe.WithFrameSize(128))
		if err != nil {
			if !errors.Is(err, packetio.ErrInvalid) && !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(err.Error(), "WithNUMANode(") {
				t.Fatalf("New(WithNUMANode(%d)): %v", n, err)
			}
			return
		}
		defer a.Close()
		defer b.Close()
		if c := a.Capabilities(); c.NUMABound != (n != -1) || c.NUMABound && c.NUMANode != n {
			t.Fatalf("WithNUMANode(%d): NUMABound %v NUMANode %d", n, c.NUMABound, c.NUMANode)
		}
	})
}

// A pipe whose regions live on NUMA node 0, bound before their pages are
// touched; Capabilities says where they are.
func ExampleWithNUMANode() {
	a, b, err := pipe.New(pipe.WithNUMANode(0))
	if err != nil {
		// packetio.ErrInvalid for a node that is not online,
		// packetio.ErrUnsupported on a host without NUMA.
		return
	}
	defer a.Close()
	defer b.Close()
	c := a.Capabilities()
	_ = c.NUMABound // true
	_ = c.NUMANode  // 0
}
