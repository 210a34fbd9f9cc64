//go:build linux

package backend

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestLineGolden opens afpacket and afxdp on a veth in a throwaway
// namespace with several configurations and compares their first lines,
// interface names masked, with testdata/line.golden: what was granted is
// read back from the device.
func TestLineGolden(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedBPF(t)
	p := netns.New(t)
	var got []string
	for _, tc := range []struct {
		backend string
		c       Config
		rx, tx  bool
		cpus    []int
		feed    string
	}{
		{"afpacket", Config{TxQueues: 1, RxQueues: 1}, true, false, []int{1}, "fed by IFACE_B"},
		{"afpacket", Config{TxQueues: 1, RxQueues: 1, LowLatency: true}, true, true, nil, ""},
		{"afpacket", Config{TxQueues: 1}, false, true, []int{1, 0}, "sending to nobody"},
		{"afxdp", Config{TxQueues: 1, RxQueues: 1}, true, false, []int{1}, "fed by IFACE_B"},
		{"afxdp", Config{TxQueues: 1, RxQueues: 1, Stamps: true, BusyPoll: true}, true, false, []int{1}, ""},
		{"afxdp", Config{TxQueues: 1}, false, true, nil, "sending to nobody"},
	} {
		var d packetio.Device
		err := p.A.Do(func() (err error) { d, err = Open(tc.backend, p.A.Link, tc.c); return err })
		if err != nil {
			t.Fatalf("%s %+v: %v", tc.backend, tc.c, err)
		}
		l := Line{Program: "example", Backend: tc.backend, Iface: p.A.Link, Dev: d, Config: tc.c, Rx: tc.rx, Tx: tc.tx, Batch: 64, CPUs: tc.cpus, Feed: tc.feed}
		s := l.String()
		d.Close()
		got = append(got, strings.NewReplacer(p.A.Link, "IFACE_A", p.B.Link, "IFACE_B").Replace(s))
	}
	text := strings.Join(got, "\n") + "\n"
	golden := filepath.Join("testdata", "line.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != text {
		t.Errorf("first lines differ from %s (-update rewrites it):\ngot:\n%s\nwant:\n%s", golden, text, want)
	}
}

func TestCheckFlags(t *testing.T) {
	for _, tc := range []struct {
		backend string
		f       Flags
		want    string // "" accepted
	}{
		{"afxdp", Flags{BusyPoll: true, Stamps: true}, ""},
		{"afpacket", Flags{Stamps: true}, ""},
		{"afpacket", Flags{BusyPoll: true}, "-busy-poll: afpacket"},
		{"dpdk", Flags{BusyPoll: true}, "-busy-poll: dpdk"},
		{"dpdk", Flags{Stamps: true}, "-stamps: dpdk"},
		{"mlx5", Flags{Stamps: true}, ""},
		{"nosuch", Flags{BusyPoll: true}, "-busy-poll: nosuch"},
	} {
		err := CheckFlags(tc.backend, tc.f)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckFlags(%s, %+v) = %v, want %q", tc.backend, tc.f, err, tc.want)
		}
	}
}

func TestCPUString(t *testing.T) {
	for _, tc := range []struct {
		cpus []int
		want string
	}{{nil, "workers unpinned"}, {[]int{1}, "worker CPU 1"}, {[]int{1, 0}, "worker CPUs 1,0"}} {
		if got := CPUString(tc.cpus); got != tc.want {
			t.Errorf("CPUString(%v) = %q, want %q", tc.cpus, got, tc.want)
		}
	}
}

// TestXDPTraitsKick: an AF_XDP transmit says what one kick sends, and why
// where the kernel kept its budget; nothing where no socket transmits in
// copy mode.
func TestXDPTraitsKick(t *testing.T) {
	kept := "transmit budget kept at 32 frames a kick (setsockopt XDP_MAX_TX_SKB_BUDGET: protocol not available)"
	for _, tc := range []struct {
		in   xdp.Info
		want string
	}{
		{xdp.Info{TxBudget: 2048}, "up to 2048 frames a kick"},
		{xdp.Info{TxBudget: 32, Decisions: []string{"zero-copy not granted by the driver: native copy mode", kept}}, "up to 32 frames a kick (" + kept + ")"},
		{xdp.Info{}, ""},
	} {
		if got := XDPTraits(tc.in).Kick; got != tc.want {
			t.Errorf("XDPTraits(TxBudget %d).Kick = %q, want %q", tc.in.TxBudget, got, tc.want)
		}
	}
}
