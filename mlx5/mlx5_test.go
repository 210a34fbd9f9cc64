//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/mlx5/internal/dv"
	"github.com/packetio/packetio/mlx5/internal/ring"
	"github.com/packetio/packetio/mlx5/internal/wqe"
	"github.com/packetio/packetio/packetiotest"
)

// On a machine with no ConnectX, Open fails cleanly for every interface: an
// open OpError matching ErrNoDevice that says no mlx5 device backs it.
func TestOpenWithoutConnectX(t *testing.T) {
	names := []string{"lo", "packetio-none0"}
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			if _, err := os.Stat("/sys/class/net/" + e.Name() + "/device/infiniband"); err == nil {
				continue // a real RDMA interface: not this test's business
			}
			names = append(names, e.Name())
		}
	}
	for _, name := range names {
		d, err := Open(name, WithQueues(1))
		if err == nil {
			d.Close()
			t.Fatalf("Open(%q) succeeded without an mlx5 device", name)
		}
		var oe *packetio.OpError
		if !errors.As(err, &oe) || oe.Op != "open" || oe.Backend != "mlx5" || oe.Iface != name || !errors.Is(err, packetio.ErrNoDevice) {
			t.Errorf("Open(%q): %v, want an open OpError matching ErrNoDevice", name, err)
		}
		if !strings.Contains(err.Error(), "no mlx5 device backs interface") {
			t.Errorf("Open(%q): %v does not say no mlx5 device backs the interface", name, err)
		}
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
	} {
		// A ConnectX-less name: an option error must come first.
		_, err := Open("lo", opts...)
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
		d, err := Open("lo", WithRxQueues(1), WithSteering(f))
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
