package libxdp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to make it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// sampleConfig is the config of three components: priority 10 handling
// frags and chaining on PASS and DROP, then two of priority 50 chaining on
// PASS.
func sampleConfig() config {
	const retval = 1 << dispatcherRetval
	return config{
		NumProgs:     3,
		ChainActions: [MaxComponents]uint32{retval | 1<<xdpPass | 1<<1, retval | 1<<xdpPass, retval | 1<<xdpPass},
		RunPrios:     [MaxComponents]uint32{10, 50, 50},
		ProgFlags:    [MaxComponents]uint32{fragsFlag},
	}
}

// TestConfigGolden pins the byte layout of struct xdp_dispatcher_config
// v2 on this (little-endian) machine: magic 236, version 2, 3 enabled, no
// frags, then the three arrays of ten u32.
func TestConfigGolden(t *testing.T) {
	c := sampleConfig()
	b := c.marshal()
	if len(b) != configSize || configSize != 124 {
		t.Fatalf("%d bytes, want 124", len(b))
	}
	golden(t, "config_v2.hex", []byte(hex.Dump(b)))
	back, err := parseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if back != c {
		t.Errorf("parse(marshal(c)) = %+v, want %+v", back, c)
	}
}

func TestParseConfig(t *testing.T) {
	good := sampleConfig()
	valid := good.marshal()
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	for _, tc := range []struct {
		name  string
		value []byte
		want  string // "" for success
	}{
		{"valid", valid, ""},
		{"empty", nil, "0 bytes"},
		{"one byte", []byte{236}, "1 bytes"},
		{"no magic (version 1)", with(func(b []byte) []byte { b[0] = 3; return b }), "no dispatcher magic"},
		{"version 1 with magic", with(func(b []byte) []byte { b[1] = 1; return b }), "version 1"},
		{"version 3", with(func(b []byte) []byte { b[1] = 3; return b }), "version 3"},
		{"short", valid[:100], "100 bytes"},
		{"long", append(bytes.Clone(valid), 0), "125 bytes"},
		{"eleven enabled", with(func(b []byte) []byte { b[2] = 11; return b }), "11 slots"},
		{"frags byte 2", with(func(b []byte) []byte { b[3] = 2; return b }), "frags byte 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(tc.value)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want == "" && c != good:
				t.Fatalf("parsed %+v, want %+v", c, good)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// FuzzConfig feeds arbitrary map values to the config decoder: it never
// panics, and whatever it accepts encodes back to the same bytes, with
// no more slots enabled than exist.
func FuzzConfig(f *testing.F) {
	c := sampleConfig()
	f.Add(c.marshal())
	f.Add([]byte{})
	f.Add([]byte{236, 2})
	f.Add(make([]byte, configSize))
	f.Fuzz(func(t *testing.T, v []byte) {
		ver, verr := valueVersion(v)
		c, err := parseConfig(v)
		if err != nil {
			return
		}
		if verr != nil || ver != dispatcherVersion {
			t.Fatalf("parsed a value whose version reads as %d, %v", ver, verr)
		}
		if c.NumProgs > MaxComponents {
			t.Fatalf("accepted %d slots", c.NumProgs)
		}
		if got := c.marshal(); !bytes.Equal(got, v) {
			t.Fatalf("marshal(parse(v)) = %x, want %x", got, v)
		}
	})
}

// TestDispatcherListing pins the generated dispatcher instruction by
// instruction.
func TestDispatcherListing(t *testing.T) {
	insns := dispatcherInsns()
	golden(t, "dispatcher.asm", []byte(fmt.Sprintf("%v", insns)))
	// Every function is global int f(struct xdp_md *) with its symbol.
	var funcs []string
	for _, ins := range insns {
		if sym := ins.Symbol(); sym != "" && sym != outLabel {
			funcs = append(funcs, sym)
		}
	}
	want := []string{dispatcherName, "prog0", "prog1", "prog2", "prog3", "prog4", "prog5", "prog6", "prog7", "prog8", "prog9"}
	if fmt.Sprint(funcs) != fmt.Sprint(want) {
		t.Errorf("functions %v, want %v", funcs, want)
	}
}

func TestAttachTarget(t *testing.T) {
	for _, tc := range []struct {
		i, n int
		want string
	}{{0, 1, dispatcherName}, {0, 2, "prog0"}, {1, 2, "prog1"}, {9, 10, "prog9"}} {
		if got := attachTarget(tc.i, tc.n); got != tc.want {
			t.Errorf("attachTarget(%d, %d) = %q, want %q", tc.i, tc.n, got, tc.want)
		}
	}
}

// TestOrder sorts components the way libxdp's cmp_xdp_programs does.
func TestOrder(t *testing.T) {
	old := func(name string, prio uint32, tag string, load int) *slot {
		return &slot{name: name, prio: prio, tag: tag, loadTime: time.Duration(load) * time.Second}
	}
	fresh := func(name string, prio uint32) *slot { return &slot{name: name, prio: prio, isNew: true} }
	for _, tc := range []struct {
		name string
		in   []*slot
		want string
	}{
		{"priority first", []*slot{old("a", 50, "", 0), old("b", 10, "", 0), fresh("c", 5)}, "c* b a"},
		{"then name", []*slot{old("zeta", 50, "", 0), fresh("alpha", 50)}, "alpha* zeta"},
		{"then attached before new", []*slot{fresh("same", 50), old("same", 50, "", 0)}, "same same*"},
		{"then tag", []*slot{old("x", 1, "bb", 0), old("x", 1, "aa", 0)}, "x(aa) x(bb)"},
		{"then load time", []*slot{old("x", 1, "aa", 2), old("x", 1, "aa", 1)}, "x(aa,1) x(aa,2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sortSlots(tc.in)
			var got []string
			for _, s := range tc.in {
				n := s.name
				switch {
				case s.isNew:
					n += "*"
				case s.loadTime != 0:
					n += fmt.Sprintf("(%s,%d)", s.tag, s.loadTime/time.Second)
				case s.tag != "":
					n += "(" + s.tag + ")"
				}
				got = append(got, n)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("order %q, want %q", g, tc.want)
			}
		})
	}
}

// TestConfigFor: bit 31 in every slot's chain bitmap, the priorities in
// run order, and frags only when every component has them.
func TestConfigFor(t *testing.T) {
	a := &slot{prio: 10, chain: 1 << xdpPass, frags: true}
	b := &slot{prio: 20, chain: 1<<xdpPass | 1<<1}
	c := configFor([]*slot{a, b})
	if c.NumProgs != 2 || c.Frags {
		t.Errorf("NumProgs %d Frags %v, want 2 false", c.NumProgs, c.Frags)
	}
	if c.ChainActions[0] != 1<<31|1<<xdpPass || c.ChainActions[1] != 1<<31|1<<xdpPass|1<<1 || c.ChainActions[2] != 0 {
		t.Errorf("chain actions %#x", c.ChainActions)
	}
	if c.RunPrios[0] != 10 || c.RunPrios[1] != 20 || c.ProgFlags[0] != fragsFlag || c.ProgFlags[1] != 0 {
		t.Errorf("prios %v flags %v", c.RunPrios, c.ProgFlags)
	}
	b.frags = true
	if c := configFor([]*slot{a, b}); !c.Frags {
		t.Error("all components handle frags, the dispatcher does not")
	}
}

func TestNewSlot(t *testing.T) {
	xdp := &ebpf.ProgramSpec{Name: "a_rather_long_program_name", Type: ebpf.XDP, Instructions: asm.Instructions{asm.Return()}}
	s, err := newSlot(Component{Spec: xdp})
	if err != nil {
		t.Fatal(err)
	}
	if s.prio != DefaultPriority || s.chain != 1<<xdpPass || s.name != "a_rather_long_p" || !s.isNew {
		t.Errorf("defaults: %+v", s)
	}
	for _, tc := range []struct {
		name string
		c    Component
		want string
	}{
		{"no spec", Component{}, "no program spec"},
		{"not XDP", Component{Spec: &ebpf.ProgramSpec{Name: "k", Type: ebpf.Kprobe}}, "want XDP"},
		{"negative priority", Component{Spec: xdp, Priority: -1}, "priority -1"},
		{"bit 31", Component{Spec: xdp, ChainActions: 1 << 31}, "bit 31"},
	} {
		if _, err := newSlot(tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

func TestErrorWording(t *testing.T) {
	e := &Error{Op: "add", Ifindex: 7, Prog: 42, Name: "xdp_dispatcher", Dir: "/b/xdp/dispatch-7-42", Err: fmt.Errorf("%w: its pin directory is missing", ErrNotShared)}
	want := `libxdp add ifindex 7: program 42 "xdp_dispatcher" (/b/xdp/dispatch-7-42): the XDP hook is not shared through a libxdp dispatcher: its pin directory is missing`
	if e.Error() != want {
		t.Errorf("got  %s\nwant %s", e, want)
	}
	if !errors.Is(e, ErrNotShared) {
		t.Error("not ErrNotShared")
	}
}
