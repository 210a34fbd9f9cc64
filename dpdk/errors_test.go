//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

// wantOpError checks that err is an *packetio.OpError of dpdk for op on
// iface and queue, matching sentinel.
func wantOpError(t *testing.T, what string, err error, op, iface string, queue int, sentinel error) {
	t.Helper()
	packetiotest.WantOpError(t, what, err, packetio.OpError{Op: op, Backend: "dpdk", Iface: iface, Queue: queue, Err: sentinel})
}

// TestOpenErrors: every refusal of Open that can be provoked here is an
// open OpError naming the device, matching the sentinel of its cause, and
// its message names what was wrong; a failed Open returns a nil Device.
func TestOpenErrors(t *testing.T) {
	testenv.NeedRoot(t)
	p := netns.New(t)
	held := openT(t, "net_null0", small()...)
	for _, tc := range []struct {
		name, dev string
		opts      []Option
		sentinel  error
		says      string
	}{
		{"nil option", "net_null1", []Option{WithTxDepth(256), nil}, packetio.ErrInvalid, "option 7 of 7 is nil"},
		{"empty name", "", nil, packetio.ErrInvalid, `device name ""`},
		{"neither PCI nor vdev", "eth9", nil, packetio.ErrInvalid, "neither a PCI address"},
		{"tx queues", "net_null1", []Option{WithTxQueues(0)}, packetio.ErrInvalid, "WithTxQueues(0)"},
		{"rx queues", "net_null1", []Option{WithRxQueues(-1)}, packetio.ErrInvalid, "WithRxQueues(-1)"},
		{"tx depth", "net_null1", []Option{WithTxDepth(1000)}, packetio.ErrInvalid, "WithTxDepth(1000)"},
		{"rx depth", "net_null1", []Option{WithRxDepth(1 << 16)}, packetio.ErrInvalid, "WithRxDepth(65536)"},
		{"frame size", "net_null1", []Option{WithFrameSize(3000)}, packetio.ErrInvalid, "WithFrameSize(3000)"},
		{"frames", "net_null1", []Option{WithFrames(1000)}, packetio.ErrInvalid, "WithFrames(1000)"},
		{"memory", "net_null1", []Option{WithMemory(-1)}, packetio.ErrInvalid, "WithMemory(-1)"},
		{"file prefix", "net_null1", []Option{WithFilePrefix("a/b")}, packetio.ErrInvalid, `WithFilePrefix("a/b")`},
		{"log level", "net_null1", []Option{WithLogLevel("x\x00")}, packetio.ErrInvalid, "WithLogLevel"},
		{"EAL args", "net_null1", []Option{WithEALArgs("-a", "b\x00")}, packetio.ErrInvalid, "WithEALArgs"},
		{"contradicting filter", "net_null1", []Option{WithSteering(packetio.SteeringFilter{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}})}, packetio.ErrUnsupported, "WithSteering"},
		{"filter without rx", "net_null1", []Option{WithRxQueues(0), WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchVLAN(1)}})}, packetio.ErrUnsupported, "WithRxQueues(0)"},
		{"unknown driver", "net_nosuchdriver0", nil, packetio.ErrNoDevice, "no DPDK driver"},
		{"no such PCI device", "0000:99:00.0", nil, packetio.ErrNoDevice, "0000:99:00.0"},
		{"af_packet without its interface", "net_af_packet0,iface=pionosuch0", nil, packetio.ErrNoDevice, `"pionosuch0"`},
		{"af_xdp without its interface", "net_af_xdp0,iface=pionosuch0", nil, packetio.ErrNoDevice, `"pionosuch0"`},
		{"af_xdp frames below the kernel's chunk", "net_af_xdp0,iface=" + p.A.Link, []Option{WithFrameSize(1024)}, packetio.ErrInvalid, "WithFrameSize(1024): net_af_xdp"},
		{"driver refuses its arguments", "net_null1,bogus=1", nil, packetio.ErrSetup, "refused"},
		{"already open", "net_null0", nil, packetio.ErrBusy, "already open"},
		{"more queues than the port", "net_af_packet0,iface=" + p.A.Link, []Option{WithTxQueues(4)}, packetio.ErrUnsupported, "4 tx"},
		{"filter the driver cannot install", "net_null1", []Option{WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(0x88b5)}})}, packetio.ErrUnsupported, "not implemented"},
		{"TSO the driver does not keep", "net_null1", []Option{WithTSO()}, packetio.ErrUnsupported, "segmentation"},
		{"region beyond the EAL's memory", "net_null1", []Option{WithFrames(1 << 17)}, packetio.ErrSetup, "memzone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append(append(append([]Option(nil), ealOpts...), small()...), tc.opts...)
			var d *Device
			err := p.A.Do(func() error {
				var err error
				d, err = Open(tc.dev, opts...)
				return err
			})
			if d != nil {
				d.Close()
				t.Fatal("opened")
			}
			wantOpError(t, "Open", err, "open", tc.dev, packetio.NoQueue, tc.sentinel)
			if err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Open: %v; want it to say %q", err, tc.says)
			}
		})
	}
	// Nothing a refusal got to is left behind.
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"net_null0", "net_null1", "net_af_packet0,iface=" + p.A.Link} {
		d, err := openIn(t, p.A, dev, small()...)
		if err != nil {
			t.Fatalf("%s after the refusals: %v", dev, err)
		}
		d.Close()
	}
}

// TestNilDevice: a failed Open's nil *Device, even inside a packetio.Device,
// answers every method with zero values or an error wrapping ErrClosed.
func TestNilDevice(t *testing.T) {
	var d *Device
	var pd packetio.Device = d
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Close", pd.Close},
		{"Close again", d.Close},
		{"PortStats", func() error { _, err := d.PortStats(); return err }},
		{"XStats", func() error { _, err := d.XStats(); return err }},
	} {
		if err := tc.call(); !errors.Is(err, packetio.ErrClosed) {
			t.Errorf("%s on a nil Device: %v, want ErrClosed", tc.name, err)
		}
	}
	if pd.NumTxQueues() != 0 || pd.NumRxQueues() != 0 || pd.TxQueue(0) != nil || pd.RxQueue(0) != nil {
		t.Error("a nil Device has queues")
	}
	if pd.Capabilities() != (packetio.Capabilities{}) || d.Info().Name != "" {
		t.Error("a nil Device describes something")
	}
}

// TestQueueErrors: the queues' failures are OpErrors naming the queue.
func TestQueueErrors(t *testing.T) {
	d := openT(t, "net_null0", small()...)
	name := d.info.Name
	tx, rx := d.TxQueue(0), d.RxQueue(0)
	_, err := tx.SendFunc(1, func(int, []byte) int { return -1 })
	wantOpError(t, "SendFunc with a negative length", err, "send", name, 0, packetio.ErrBadLength)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = tx.SendFunc(1, func(int, []byte) int { return 60 })
	wantOpError(t, "SendFunc after Close", err, "send", name, 0, packetio.ErrClosed)
	_, err = rx.Poll(0)
	wantOpError(t, "Poll after Close", err, "poll", name, 0, packetio.ErrClosed)
	wantOpError(t, "tx Err after Close", tx.Err(), "transmit", name, 0, packetio.ErrClosed)
	wantOpError(t, "rx Err after Close", rx.Err(), "receive", name, 0, packetio.ErrClosed)
	_, err = d.PortStats()
	wantOpError(t, "PortStats after Close", err, "port stats", name, packetio.NoQueue, packetio.ErrClosed)
}
