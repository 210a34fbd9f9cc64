//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/mlx5/internal/dv"
	"github.com/packetio/packetio/mlx5/internal/ring"
	"github.com/packetio/packetio/mlx5/internal/wqe"
	"github.com/packetio/packetio/packetiotest"
)

// On a machine with no ConnectX, Open fails cleanly: an open OpError
// matching ErrNoDevice that says no mlx5 device backs the interface. It is
// asked only about interfaces the test made up or created (a veth in a
// throwaway namespace), never about the host's own.
func TestOpenWithoutConnectX(t *testing.T) {
	testenv.NeedRoot(t)
	pair := netns.New(t)
	for _, c := range []struct {
		name string
		do   func(func() error) error
	}{
		{"pktio-none0", func(fn func() error) error { return fn() }},
		{pair.A.Link, pair.A.Do},
	} {
		var d *Device
		var err error
		if e := c.do(func() error { d, err = Open(c.name, WithQueues(1)); return nil }); e != nil {
			t.Fatal(e)
		}
		if err == nil {
			d.Close()
			t.Fatalf("Open(%q) succeeded without an mlx5 device", c.name)
		}
		var oe *packetio.OpError
		if !errors.As(err, &oe) || oe.Op != "open" || oe.Backend != "mlx5" || oe.Iface != c.name || !errors.Is(err, packetio.ErrNoDevice) {
			t.Errorf("Open(%q): %v, want an open OpError matching ErrNoDevice", c.name, err)
		}
		if !strings.Contains(err.Error(), "no mlx5 device backs interface") {
			t.Errorf("Open(%q): %v does not say no mlx5 device backs the interface", c.name, err)
		}
	}
}

// Every option is checked before any hardware is looked at: a refusal wraps
// ErrInvalid and names the option and its value, a nil option's position,
// or the interface name, quoted.
func TestValidateNamesTheInput(t *testing.T) {
	long := "abcdefghijklmnop" // 16 bytes
	for _, c := range []struct {
		name, ifname string
		opts         []Option
		says         string
	}{
		{"nil option", "pktio-none0", []Option{WithQueues(1), nil}, "option 2 is nil"},
		{"negative tx queues", "pktio-none0", []Option{WithTxQueues(-1)}, "WithTxQueues(-1)"},
		{"too many queues", "pktio-none0", []Option{WithQueues(65)}, "WithQueues(65)"},
		{"negative rx queues", "pktio-none0", []Option{WithRxQueues(-2)}, "WithRxQueues(-2)"},
		{"no queues", "pktio-none0", []Option{WithTxQueues(0)}, "WithTxQueues(0)"},
		{"zero frames", "pktio-none0", []Option{WithFrames(0)}, "WithFrames(0)"},
		{"too few frames", "pktio-none0", []Option{WithFrames(16)}, "WithFrames(16)"},
		{"zero frame size", "pktio-none0", []Option{WithFrameSize(0)}, "WithFrameSize(0)"},
		{"odd frame size", "pktio-none0", []Option{WithFrameSize(3000)}, "WithFrameSize(3000)"},
		{"zero tx depth", "pktio-none0", []Option{WithTxDepth(0)}, "WithTxDepth(0)"},
		{"odd rx depth", "pktio-none0", []Option{WithRxDepth(1000)}, "WithRxDepth(1000)"},
		{"rings", "pktio-none0", []Option{WithRingsPerQueue(-1)}, "WithRingsPerQueue(-1)"},
		{"bad CPU", "pktio-none0", []Option{WithAffinity(1, 5000)}, "CPU 5000"},
		{"no CPUs", "pktio-none0", []Option{WithAffinity()}, "WithAffinity()"},
		{"empty name", "", nil, `""`},
		{"name with NUL", "mlx\x00", nil, `"mlx\x00"`},
		{"name 16 bytes", long, nil, `"` + long + `"`},
		{"name with slash", "a/b", nil, `"a/b"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(c.ifname, c.opts...)
			if d != nil || !errors.Is(err, packetio.ErrInvalid) {
				t.Fatalf("Open: %v, %v; want nil and ErrInvalid", d, err)
			}
			var oe *packetio.OpError
			if !errors.As(err, &oe) || oe.Op != "open" || oe.Iface != c.ifname {
				t.Errorf("%v is not an open OpError on %q", err, c.ifname)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("%q does not say %s", err, c.says)
			}
		})
	}
}

// Every method of a nil *Device (what a failed Open returns), also through a
// packetio.Device variable, returns an error matching ErrClosed or a zero
// value instead of panicking.
func TestNilDevice(t *testing.T) {
	d, err := Open("pktio-none0", nil)
	if err == nil || d != nil {
		t.Fatalf("Open with a nil option = %v, %v; want nil and an error", d, err)
	}
	var dev packetio.Device = d
	for _, c := range []struct {
		name string
		ok   func() bool
	}{
		{"Close", func() bool { return errors.Is(dev.Close(), packetio.ErrClosed) }},
		{"Close again", func() bool { return errors.Is(dev.Close(), packetio.ErrClosed) }},
		{"Capabilities", func() bool { return dev.Capabilities() == packetio.Capabilities{} }},
		{"NumTxQueues", func() bool { return dev.NumTxQueues() == 0 }},
		{"NumRxQueues", func() bool { return dev.NumRxQueues() == 0 }},
		{"TxQueue", func() bool { return dev.TxQueue(0) == nil }},
		{"RxQueue", func() bool { return dev.RxQueue(0) == nil }},
		{"Info", func() bool { return d.Info().Interface == "" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			if !c.ok() {
				t.Error("wrong result")
			}
		})
	}
}

func TestOptionsAreCheckedBeforeHardware(t *testing.T) {
	for name, opts := range map[string][]Option{
		"too many queues":         {WithQueues(65)},
		"negative tx":             {WithTxQueues(-1)},
		"no queues":               {WithTxQueues(0)},
		"frame size":              {WithFrameSize(3000)},
		"tiny frame size":         {WithFrameSize(64)},
		"frames":                  {WithFrames(1 << 22)},
		"too few frames":          {WithFrames(16)},
		"depth":                   {WithTxDepth(1000)},
		"steering without rx":     {WithSteering(packetio.SteeringFilter{Promiscuous: true})},
		"contradictory steering":  {WithRxQueues(1), WithSteering(packetio.SteeringFilter{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}})},
		"rings":                   {WithRingsPerQueue(17)},
		"too many hardware rings": {WithTxQueues(32), WithRingsPerQueue(4)},
		"no CPUs":                 {WithAffinity()},
		"bad CPU":                 {WithAffinity(5000)},
		"NUMA node":               {WithNUMANode(-2)},
		"huge NUMA node":          {WithNUMANode(1024)},
	} {
		// A made-up name: an option error must come first.
		_, err := Open("pktio-none0", opts...)
		want := packetio.ErrInvalid
		if strings.Contains(name, "steering") {
			want = packetio.ErrUnsupported
		}
		var oe *packetio.OpError
		if !errors.As(err, &oe) || !errors.Is(err, want) {
			t.Errorf("%s: %v, want an OpError matching %v", name, err, want)
			continue
		}
		if strings.Contains(err.Error(), "no mlx5 device") {
			t.Errorf("%s: the hardware was looked at before the options were refused: %v", name, err)
		}
	}
}

func TestPlanTx(t *testing.T) {
	const empw = wqe.FlagCQEV1 | wqe.FlagEnhancedMPW
	for _, tc := range []struct {
		name     string
		opts     []Option
		flags    uint64
		required int
		want     txPlan
		fails    bool
	}{
		{"no eMPW: send", nil, wqe.FlagCQEV1, 0, txPlan{ring.ModeSend, 1, 0}, false},
		{"inline required: send", nil, empw, 18, txPlan{ring.ModeSend, 1, 18}, false},
		{"one queue: pointer", nil, empw, 0, txPlan{ring.ModeMPWPointer, 1, 0}, false},
		{"two tx, no rx: copied x4", []Option{WithTxQueues(2)}, empw, 0, txPlan{ring.ModeMPWCopied, 4, 0}, false},
		{"two each way: pointer", []Option{WithQueues(2)}, empw, 0, txPlan{ring.ModeMPWPointer, 1, 0}, false},
		{"four each way: copied x4", []Option{WithQueues(4)}, empw, 0, txPlan{ring.ModeMPWCopied, 4, 0}, false},
		{"forced off", []Option{WithTxQueues(4), WithoutMultiPacket()}, empw, 0, txPlan{ring.ModeSend, 1, 0}, false},
		{"forced on", []Option{WithMultiPacket()}, empw, 0, txPlan{ring.ModeMPWCopied, 1, 0}, false},
		{"forced on without eMPW", []Option{WithMultiPacket()}, wqe.FlagCQEV1, 0, txPlan{}, true},
		{"forced on with inline", []Option{WithMultiPacket()}, empw, 18, txPlan{}, true},
		{"rings capped", []Option{WithTxQueues(32)}, empw, 0, txPlan{ring.ModeMPWCopied, 2, 0}, false},
	} {
		c := defaults()
		for _, o := range tc.opts {
			if err := o(&c); err != nil {
				t.Fatal(err)
			}
		}
		got, err := c.planTx(tc.flags, tc.required)
		if tc.fails {
			if !errors.Is(err, packetio.ErrUnsupported) {
				t.Errorf("%s: %v, want ErrUnsupported", tc.name, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestConformOnHardware runs the shared suite on a real ConnectX named by
// PACKETIO_IFACE; the traffic checks need PACKETIO_PEER_IFACE, a second
// ConnectX port cabled to the first. It is verification level 3: the
// model-card run in mlx5/internal/mockdev is not a substitute for it, and a
// machine without a ConnectX says so rather than pass.
func TestConformOnHardware(t *testing.T) {
	ifname := testenv.NeedHardware(t, "PACKETIO_IFACE", "a ConnectX interface")
	testenv.NeedRoot(t)
	opener := func(name string) packetiotest.OpenFunc {
		return func(t *testing.T) packetiotest.Device {
			d, err := Open(name, WithQueues(1), WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(packetiotest.EtherType)}}))
			if err != nil {
				t.Fatalf("Open(%s): %v", name, err)
			}
			t.Log(d.Info())
			return d
		}
	}
	var opts []packetiotest.Option
	if peer := os.Getenv("PACKETIO_PEER_IFACE"); peer != "" {
		opts = append(opts, packetiotest.WithPeer(opener(peer)))
	}
	packetiotest.Run(t, opener(ifname), opts...)
}

// TestSteeringRefusalsNeedNoCard checks that contradictory filters are
// refused before any device is looked at, on a machine with no ConnectX.
func TestSteeringRefusalsNeedNoCard(t *testing.T) {
	for _, f := range []packetio.SteeringFilter{
		{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}},
		{Match: append(packetio.MatchDstPort(packetio.IPProtoUDP, 9), packetio.MatchIPProto(packetio.IPProtoTCP))},
		{Promiscuous: true, Match: []packetio.Match{packetio.MatchVLAN(1)}},
	} {
		d, err := Open("pktio-none0", WithRxQueues(1), WithSteering(f))
		if d != nil {
			d.Close()
		}
		if !errors.Is(err, packetio.ErrUnsupported) || errors.Is(err, dv.ErrNoDevice) {
			t.Errorf("%v: Open = %v, want a steering refusal", f.Match, err)
		}
	}
}

// TestSteeringContract runs the shared steering checks on the ConnectX named
// by PACKETIO_IFACE (verification level 3).
func TestSteeringContract(t *testing.T) {
	ifname := testenv.NeedHardware(t, "PACKETIO_IFACE", "a ConnectX interface")
	packetiotest.RunSteering(t, func(t *testing.T, f packetio.SteeringFilter) (packetiotest.Device, error) {
		d, err := Open(ifname, WithRxQueues(1), WithSteering(f))
		if errors.Is(err, dv.ErrNoDevice) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return d, nil
	})
}
