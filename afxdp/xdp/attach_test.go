package xdp

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
)

// passProgram loads a two-instruction XDP_PASS program named name: a
// program of another process, as far as packetio can tell.
func passProgram(t *testing.T, name string) *ebpf.Program {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: name, Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()},
	})
	if err != nil {
		t.Fatalf("load %q: %v", name, err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// attachLegacy attaches prog to h's interface in generic mode through
// netlink, as an older tool would, and detaches whatever is there at the
// end of the test.
func attachLegacy(t *testing.T, h *netns.Host, prog *ebpf.Program) uint32 {
	t.Helper()
	err := h.Do(func() error {
		lk, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(lk, prog.FD(), unix.XDP_FLAGS_SKB_MODE)
	})
	if err != nil {
		t.Fatalf("attach through netlink: %v", err)
	}
	t.Cleanup(func() { detachAll(t, h) })
	return xdpAttached(t, h)
}

// detachAll removes a generic-mode program from h's interface, if any.
func detachAll(t *testing.T, h *netns.Host) {
	t.Helper()
	_ = h.Do(func() error {
		lk, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(lk, -1, unix.XDP_FLAGS_SKB_MODE)
	})
}

// openErr opens a fleet on h's interface and closes it at the end of the
// test, if it opened.
func openErr(t *testing.T, h *netns.Host, opts ...Option) (*Fleet, error) {
	t.Helper()
	var f *Fleet
	err := h.Do(func() error {
		var err error
		f, err = Open(h.Link, opts...)
		return err
	})
	if err == nil {
		t.Cleanup(func() { f.Close() })
	}
	return f, err
}

// TestForeignProgram: a program another process attached is refused with
// ErrBusy naming it and stays attached; WithReplaceProgram replaces it
// while the fleet is open and puts it back on Close (and when Open fails);
// a program held by a BPF link is refused even with the option.
func TestForeignProgram(t *testing.T) {
	p := vethPair(t)
	all := WithFilter(filter.MatchAll())

	t.Run("refused", func(t *testing.T) {
		id := attachLegacy(t, p.B, passProgram(t, "foreign"))
		_, err := openErr(t, p.B, all)
		want := fmt.Sprintf("%s already runs XDP program %d \"foreign\" (attached by another process)", p.B.Link, id)
		if !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open: %v, want ErrBusy saying %q", err, want)
		}
		t.Logf("refusal: %v", err)
		if got := xdpAttached(t, p.B); got != id {
			t.Fatalf("program %d attached after the refusal, want the foreign %d", got, id)
		}
	})

	t.Run("replaced and restored", func(t *testing.T) {
		id := attachLegacy(t, p.B, passProgram(t, "foreign"))
		f, err := openErr(t, p.B, all, WithReplaceProgram())
		if err != nil {
			t.Fatalf("Open with WithReplaceProgram: %v", err)
		}
		in, _ := f.Info()
		if got := xdpAttached(t, p.B); got == id || got == 0 {
			t.Errorf("program %d attached while open, want the fleet's", got)
		}
		if !strings.Contains(strings.Join(in.Decisions, "; "), fmt.Sprintf("replaced XDP program %d \"foreign\"", id)) {
			t.Errorf("Info().Decisions %q do not name the replaced program", in.Decisions)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if got := xdpAttached(t, p.B); got != id {
			t.Fatalf("program %d attached after Close, want the foreign %d back", got, id)
		}
		if mode := attachModeOf(t, p.B); mode != "generic" {
			t.Errorf("foreign program back in %s mode, want generic", mode)
		}
	})

	t.Run("restored when Open fails", func(t *testing.T) {
		id := attachLegacy(t, p.B, passProgram(t, "foreign"))
		boom := errors.New("boom")
		_, err := openErr(t, p.B, all, WithReplaceProgram(), withOpenedHook(func(*Fleet) error { return boom }))
		if !errors.Is(err, boom) {
			t.Fatalf("Open: %v, want the hook's error", err)
		}
		if got := xdpAttached(t, p.B); got != id {
			t.Fatalf("program %d attached after a failed Open, want the foreign %d back", got, id)
		}
	})

	t.Run("held by a link", func(t *testing.T) {
		prog := passProgram(t, "foreign_link")
		var lnk link.Link
		err := p.B.Do(func() error {
			var err error
			lnk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: p.B.Index, Flags: link.XDPGenericMode})
			return err
		})
		if err != nil {
			t.Fatalf("attach through a link: %v", err)
		}
		defer lnk.Close()
		id := xdpAttached(t, p.B)
		_, err = openErr(t, p.B, all, WithReplaceProgram())
		want := fmt.Sprintf("%s already runs XDP program %d \"foreign_link\" (held by a BPF link", p.B.Link, id)
		if !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open: %v, want ErrBusy saying %q", err, want)
		}
		if got := xdpAttached(t, p.B); got != id {
			t.Fatalf("program %d attached after the refusal, want the linked %d", got, id)
		}
	})

	t.Run("same name, no socket map", func(t *testing.T) {
		// The name alone is no proof: a foreign program called
		// xsk_filter is left alone.
		id := attachLegacy(t, p.B, passProgram(t, programName))
		_, err := openErr(t, p.B, all)
		if !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("program %d", id)) {
			t.Fatalf("Open: %v, want ErrBusy naming program %d", err, id)
		}
		if got := xdpAttached(t, p.B); got != id {
			t.Fatalf("program %d attached after the refusal, want %d", got, id)
		}
	})
}

// TestLeftoverProgram: a packetio filter program (named xsk_filter, with
// its "xsks" socket map) attached the legacy way and owned by no one is
// removed by Open, which says so in Info, and nothing is left after Close.
func TestLeftoverProgram(t *testing.T) {
	p := vethPair(t)
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: "xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatalf("socket map: %v", err)
	}
	prog, err := filter.Program{Matches: []filter.Match{filter.MatchAll()}, Verdict: filter.VerdictRedirect, XSKMapFD: xsks.FD()}.Load(0)
	if err != nil {
		t.Fatalf("load the filter: %v", err)
	}
	id := attachLegacy(t, p.B, prog)
	// The process that attached it is gone: no descriptor holds it.
	prog.Close()
	xsks.Close()

	f, err := openErr(t, p.B, WithFilter(filter.MatchAll()))
	if err != nil {
		t.Fatalf("Open over a leftover: %v", err)
	}
	in, _ := f.Info()
	if !strings.Contains(strings.Join(in.Decisions, "; "), fmt.Sprintf("removed XDP program %d \"xsk_filter\", a leftover", id)) {
		t.Errorf("Info().Decisions %q do not report the removed leftover %d", in.Decisions, id)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := xdpAttached(t, p.B); got != 0 {
		t.Fatalf("program %d attached after Close, want none", got)
	}
}

func attachModeOf(t *testing.T, h *netns.Host) string {
	t.Helper()
	mode := ""
	if err := h.Do(func() error { mode = attachMode(h.Index); return nil }); err != nil {
		t.Fatal(err)
	}
	return mode
}

// TestOpenRefusesBadInput: option values out of range, impossible
// interface names and an interface that is down are refused before
// anything is attached, with the sentinel and a message naming the input.
func TestOpenRefusesBadInput(t *testing.T) {
	p := vethPair(t)
	all := WithFilter(filter.MatchAll())
	for _, tc := range []struct {
		name, iface string
		opts        []Option
		down        bool
		is          error
		want        string
	}{
		{"negative queues", p.B.Link, []Option{all, WithQueues(-1)}, false, packetio.ErrInvalid, "WithQueues(-1): "},
		{"busy poll without budget", p.B.Link, []Option{all, WithBusyPoll(50, 0)}, false, packetio.ErrInvalid, "WithBusyPoll(50, 0): "},
		{"negative CPU", p.B.Link, []Option{all, WithHostTuning(Tuning{CPUs: []int{0, -1}})}, false, packetio.ErrInvalid, "WithHostTuning(Tuning{CPUs: [0 -1]}): CPU -1"},
		{"management port 0", p.B.Link, []Option{all, WithKeepManagement(0)}, false, packetio.ErrInvalid, "WithKeepManagement([0]): "},
		{"empty name", "", []Option{all}, false, packetio.ErrInvalid, `bad interface name ""`},
		{"NUL in name", "veth\x00", []Option{all}, false, packetio.ErrInvalid, `bad interface name "veth\x00"`},
		{"name of 16 bytes", "abcdefghijklmnop", []Option{all}, false, packetio.ErrInvalid, `bad interface name "abcdefghijklmnop"`},
		{"interface down", p.B.Link, []Option{all}, true, packetio.ErrUnsupported, "interface is down (bring it up with `ip link set " + p.B.Link + " up`)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.down {
				setUp(t, p.B, false)
				t.Cleanup(func() { setUp(t, p.B, true) })
			}
			err := p.B.Do(func() error {
				f, err := Open(tc.iface, tc.opts...)
				if err == nil {
					f.Close()
				}
				return err
			})
			var oe *packetio.OpError
			if !errors.As(err, &oe) || oe.Op != "open" || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%q): %v, want an open OpError matching %v saying %q", tc.iface, err, tc.is, tc.want)
			}
			t.Logf("%v", err)
			if id := xdpAttached(t, p.B); id != 0 {
				t.Fatalf("program %d left attached", id)
			}
		})
	}
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

// TestNilFleet: every exported method on the nil *Fleet a failed Open
// returns answers with zero values or an error matching ErrClosed, never a
// panic.
func TestNilFleet(t *testing.T) {
	var f *Fleet
	closed := func(name string, err error) {
		if !errors.Is(err, packetio.ErrClosed) {
			t.Errorf("%s on a nil Fleet: %v, want ErrClosed", name, err)
		}
	}
	closed("Close", f.Close())
	_, err := f.Info()
	closed("Info", err)
	_, err = f.Stats()
	closed("Stats", err)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"NumQueues", f.NumQueues() == 0},
		{"Sockets", f.Sockets() == nil},
		{"Socket", f.Socket(0) == nil},
		{"Memory", f.Memory() == nil},
		{"Extra", func() bool { a, b := f.Extra(); return a == 0 && b == nil }()},
		{"Features", func() bool { _, ok := f.Features(); return !ok }()},
		{"WaitLinkUp", !f.WaitLinkUp(time.Millisecond)},
	} {
		if !tc.ok {
			t.Errorf("%s on a nil Fleet: not the zero value", tc.name)
		}
	}
	// Every exported method, including any added later, called through
	// reflection with zero arguments.
	v := reflect.ValueOf(f)
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		args := make([]reflect.Value, m.Type.NumIn()-1)
		for j := range args {
			args[j] = reflect.Zero(m.Type.In(j + 1))
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s on a nil Fleet panics: %v", m.Name, r)
				}
			}()
			v.Method(i).Call(args)
		}()
	}
}
