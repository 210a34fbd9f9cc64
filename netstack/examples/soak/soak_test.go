//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

// TestSoakShort is the soak CI runs on every run: 48 consecutive echoes of
// 64 MiB (16 MiB under the race detector), 8 on each configuration (afxdp native and generic, afpacket;
// RACK off and on), none of which may stall. Before gVisor's
// receiver.acceptable was patched, about one such echo in 40-100 over
// afxdp stalled for good; the long soak (`go run ./examples/soak`) is what
// measures the rate.
func TestSoakShort(t *testing.T) {
	testenv.NeedBPF(t) // afxdp loads an XDP program
	var out bytes.Buffer
	o := options{n: 8, bytes: shortBytes, deadline: 30 * time.Second, configs: defaultConfigs, port: 8080}
	sums, err := run(o, &out, false)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 6 {
		t.Fatalf("%d configurations soaked, want 6", len(sums))
	}
	for _, s := range sums {
		if s.echoes != o.n || s.completed != o.n || s.stalls != 0 || s.failed != 0 {
			t.Errorf("%s: %d echoes, %d completed, %d stalls, %d failed; want %d completed and nothing else", s.name, s.echoes, s.completed, s.stalls, s.failed, o.n)
		}
	}
	if err := verdict(sums); err != nil {
		t.Error(err)
	}
}

// TestSoakStallVerdict shows a stall makes the soak fail, and says where.
func TestSoakStallVerdict(t *testing.T) {
	for _, tc := range []struct {
		name string
		sums []summary
		want string // "" for no error
	}{
		{"clean", []summary{{config: config{name: "afxdp"}, echoes: 5, completed: 5}}, ""},
		{"stall", []summary{{config: config{name: "afxdp"}, echoes: 5, completed: 4, stalls: 1}}, "afxdp: 1 of 5 echoes stalled"},
		{"failed", []summary{{config: config{name: "afpacket+rack"}, echoes: 5, completed: 4, failed: 1}}, "afpacket+rack: 0 of 5 echoes stalled, 1 failed"},
		{"short", []summary{{config: config{name: "afxdp"}, echoes: 5, completed: 3}}, "afxdp: 0 of 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verdict(tc.sums)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("verdict: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("verdict: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseConfigs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []config // nil: refused
	}{
		{"afxdp", []config{{name: "afxdp", backend: "afxdp"}}},
		{"afxdp-generic+rack,afpacket", []config{{name: "afxdp-generic+rack", backend: "afxdp", generic: true, rack: true}, {name: "afpacket", backend: "afpacket"}}},
		{"afpacket+rack", []config{{name: "afpacket+rack", backend: "afpacket", rack: true}}},
		{"afxdp+fast", nil},
		{"dpdk", nil},
		{"afxdp,afxdp", nil},
		{"", nil},
	} {
		got, err := parseConfigs(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("parseConfigs(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("parseConfigs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseConfigs(%q)[%d] = %+v, want %+v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := run(options{n: 0, bytes: 1, deadline: time.Second, configs: "afxdp"}, nil, false); err == nil {
		t.Error("-n 0 accepted")
	}
}
