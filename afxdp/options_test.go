package afxdp

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

var promiscuous = WithSteering(packetio.SteeringFilter{Promiscuous: true})

// TestValidate: every option value out of range is refused before any I/O
// with ErrInvalid naming the option and the value; zero values are the
// defaults.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string // "" accepts
	}{
		{"defaults", nil, ""},
		{"zero values", []Option{WithQueues(0), WithFrames(0), WithFrameSize(0), WithHostTuning(xdp.Tuning{})}, ""},
		{"largest", []Option{WithQueues(xdp.MaxQueues), WithFrames(1 << 20), WithFrameSize(65536)}, ""},
		// These name the steering themselves: no promiscuous in front.
		{"bare: transmit-only, one frame", []Option{WithTransmitOnly(), WithFrames(1)}, ""},
		{"bare: steering twice", []Option{promiscuous, promiscuous}, ""},
		{"bare: match over steering", []Option{promiscuous, WithMatch(filter.MatchAll())}, "WithSteering() and WithMatch(): each names all the traffic"},
		{"bare: transmit-only over match", []Option{WithMatch(filter.MatchAll()), WithTransmitOnly()}, "WithMatch() and WithTransmitOnly(): "},
		{"nil option", []Option{nil}, "option 2 is nil"},
		{"queues -1", []Option{WithQueues(-1)}, "WithQueues(-1): want 1 to 256, or 0 for every queue"},
		{"queues 257", []Option{WithQueues(257)}, "WithQueues(257): "},
		{"frames -1", []Option{WithFrames(-1)}, "WithFrames(-1): want 2 to 1048576 (half receive, half transmit), or 0 for 4096"},
		{"frames 1", []Option{WithFrames(1)}, "WithFrames(1): "},
		{"frames too many", []Option{WithFrames(1<<20 + 1)}, "WithFrames(1048577): "},
		{"frame size -1", []Option{WithFrameSize(-1)}, "WithFrameSize(-1): want a power of two from 2048 to 65536, or 0 for 2048"},
		{"frame size 3000", []Option{WithFrameSize(3000)}, "WithFrameSize(3000): "},
		{"frame size 1024", []Option{WithFrameSize(1024)}, "WithFrameSize(1024): "},
		{"tuning CPU -1", []Option{WithHostTuning(xdp.Tuning{CPUs: []int{-1}})}, "WithHostTuning(Tuning{CPUs: [-1]}): CPU -1 is outside 0 to 1023"},
		{"tuning NAPI", []Option{WithHostTuning(xdp.Tuning{NAPIDefer: -2})}, "WithHostTuning(Tuning{NAPIDefer: -2}): "},
		{"datapath option", []Option{WithXDP(xdp.WithBusyPoll(-1, 1))}, "WithBusyPoll(-1, 1): "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]Option{promiscuous}, tc.opts...)
			if strings.HasPrefix(tc.name, "bare: ") {
				opts = tc.opts
			}
			err := newConfig(opts).validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("validate: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate: %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

// TestOpenRefusesBadInput: Open refuses bad values, impossible names and a
// down interface with an OpError before anything is attached.
func TestOpenRefusesBadInput(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	for _, tc := range []struct {
		name, iface string
		opts        []Option
		down        bool
		is          error
		want        string
	}{
		{"negative queues", p.B.Link, []Option{promiscuous, WithQueues(-1)}, false, packetio.ErrInvalid, "WithQueues(-1): "},
		{"negative frames", p.B.Link, []Option{promiscuous, WithFrames(-1)}, false, packetio.ErrInvalid, "WithFrames(-1): "},
		{"negative frame size", p.B.Link, []Option{promiscuous, WithFrameSize(-1)}, false, packetio.ErrInvalid, "WithFrameSize(-1): "},
		{"empty name", "", []Option{promiscuous}, false, packetio.ErrInvalid, `bad interface name ""`},
		{"NUL in name", "lo\x00", []Option{promiscuous}, false, packetio.ErrInvalid, `bad interface name "lo\x00"`},
		{"name of 16 bytes", "abcdefghijklmnop", []Option{promiscuous}, false, packetio.ErrInvalid, `bad interface name "abcdefghijklmnop"`},
		{"interface down", p.B.Link, []Option{promiscuous}, true, packetio.ErrUnsupported, "interface is down (bring it up with `ip link set " + p.B.Link + " up`)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.down {
				setUp(t, p.B, false)
				t.Cleanup(func() { setUp(t, p.B, true) })
			}
			err := p.B.Do(func() error {
				d, err := Open(tc.iface, tc.opts...)
				if err == nil {
					d.Close()
				}
				return err
			})
			var oe *packetio.OpError
			if !errors.As(err, &oe) || oe.Op != "open" || oe.Backend != "afxdp" || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%q): %v, want an open OpError matching %v saying %q", tc.iface, err, tc.is, tc.want)
			}
			if id := attachedProgram(t, p.B); id != 0 {
				t.Fatalf("program %d left attached", id)
			}
		})
	}
}

// TestOpenForeignProgram: the device refuses an interface another process
// runs an XDP program on, naming it, and leaves it attached; with
// WithReplaceProgram it opens and puts the program back on Close.
func TestOpenForeignProgram(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "foreign", Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := p.B.Do(func() error {
		lk, err := netlink.LinkByName(p.B.Link)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(lk, prog.FD(), unix.XDP_FLAGS_SKB_MODE)
	}); err != nil {
		t.Fatalf("attach the foreign program: %v", err)
	}
	t.Cleanup(func() {
		_ = p.B.Do(func() error {
			lk, err := netlink.LinkByName(p.B.Link)
			if err != nil {
				return err
			}
			return netlink.LinkSetXdpFdWithFlags(lk, -1, unix.XDP_FLAGS_SKB_MODE)
		})
	})
	id := attachedProgram(t, p.B)

	err = p.B.Do(func() error {
		d, err := Open(p.B.Link, promiscuous)
		if err == nil {
			d.Close()
		}
		return err
	})
	want := fmt.Sprintf("already runs XDP program %d \"foreign\" (attached by another process)", id)
	if !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v, want ErrBusy saying %q", err, want)
	}
	if got := attachedProgram(t, p.B); got != id {
		t.Fatalf("program %d attached after the refusal, want the foreign %d", got, id)
	}

	var d *Device
	if err := p.B.Do(func() error {
		var err error
		d, err = Open(p.B.Link, promiscuous, WithReplaceProgram())
		return err
	}); err != nil {
		t.Fatalf("Open with WithReplaceProgram: %v", err)
	}
	if got := attachedProgram(t, p.B); got == id {
		t.Errorf("the foreign program %d still attached while the device is open", id)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := attachedProgram(t, p.B); got != id {
		t.Fatalf("program %d attached after Close, want the foreign %d back", got, id)
	}
}

// TestNilDevice: a failed Open returns a nil *Device; every method on it,
// directly or through a packetio.Device, answers with zero values or an
// error matching ErrClosed, never a panic.
func TestNilDevice(t *testing.T) {
	var d *Device
	var pd packetio.Device = d
	for _, tc := range []struct {
		name string
		ok   func() bool
	}{
		{"Close", func() bool { return errors.Is(d.Close(), packetio.ErrClosed) }},
		{"Close via packetio.Device", func() bool { return errors.Is(pd.Close(), packetio.ErrClosed) }},
		{"Capabilities", func() bool { return reflect.ValueOf(d.Capabilities()).IsZero() }},
		{"NumTxQueues", func() bool { return pd.NumTxQueues() == 0 }},
		{"NumRxQueues", func() bool { return pd.NumRxQueues() == 0 }},
		{"TxQueue", func() bool { return pd.TxQueue(0) == nil }},
		{"RxQueue", func() bool { return pd.RxQueue(0) == nil }},
		{"Info", func() bool { return reflect.ValueOf(d.Info()).IsZero() }},
		{"Fleet", func() bool { return d.Fleet() == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panics: %v", r)
				}
			}()
			if !tc.ok() {
				t.Fatal("not the zero value or ErrClosed")
			}
		})
	}
	// Every exported method, including any added later, through
	// reflection with zero arguments.
	v := reflect.ValueOf(d)
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		args := make([]reflect.Value, m.Type.NumIn()-1)
		for j := range args {
			args[j] = reflect.Zero(m.Type.In(j + 1))
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s on a nil Device panics: %v", m.Name, r)
				}
			}()
			v.Method(i).Call(args)
		}()
	}
}

func attachedProgram(t *testing.T, h *netns.Host) uint32 {
	t.Helper()
	var id uint32
	if err := h.Do(func() error {
		lk, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		if x := lk.Attrs().Xdp; x != nil && x.Attached {
			id = x.ProgId
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

func setUp(t *testing.T, h *netns.Host, up bool) {
	t.Helper()
	err := h.Do(func() error {
		lk, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		if up {
			return netlink.LinkSetUp(lk)
		}
		return netlink.LinkSetDown(lk)
	})
	if err != nil {
		t.Fatalf("set %s up=%v: %v", h.Link, up, err)
	}
}
