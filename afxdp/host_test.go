package afxdp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/host/hosttest"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// snapshot reads h's host settings inside its namespace.
func snapshot(t *testing.T, h *netns.Host) host.Snapshot { return hosttest.Snapshot(t, h) }

// TestDefaultOpenChangesNothingOnTheHost: Open with default options, queues
// driven, and Close leave the NAPI settings, every interrupt's CPUs, the
// private flags and the thread's CPU mask as they were; with
// WithHostTuning the NAPI settings change while open and come back on
// Close.
func TestDefaultOpenChangesNothingOnTheHost(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	before := snapshot(t, p.B)
	native := afxdp.WithXDP(xdp.WithDriverMode())
	d := openOn(t, p.B, afxdp.WithSteering(testFilter), native)
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	if err := p.B.Do(func() error {
		rx.Fill(rx.NumFreeFillSlots())
		if _, err := rx.Poll(time.Millisecond); err != nil {
			return err
		}
		_, err := tx.SendFunc(1, func(int, []byte) int { return 60 })
		return err
	}); err != nil {
		t.Fatalf("drive the queues: %v", err)
	}
	if diff := before.Diff(snapshot(t, p.B)); diff != nil {
		t.Errorf("default Open changed the host while open: %q", diff)
	}
	if info := d.Info(); len(info.Tuning) != 0 {
		t.Errorf("Info().Tuning = %q, want nothing", info.Tuning)
	}
	d.Close()
	if diff := before.Diff(snapshot(t, p.B)); diff != nil {
		t.Errorf("default Open and Close changed the host: %q", diff)
	}

	tuned := afxdp.WithHostTuning(xdp.Tuning{NAPIDefer: 3, NAPIFlush: 50 * time.Microsecond, NAPIAllDrivers: true})
	d = openOn(t, p.B, afxdp.WithSteering(testFilter), native, tuned)
	diff := before.Diff(snapshot(t, p.B))
	if len(diff) != 2 || !strings.Contains(strings.Join(diff, ";"), "napi_defer_hard_irqs: 0 -> 3") ||
		!strings.Contains(strings.Join(diff, ";"), "gro_flush_timeout: 0 -> 50000") {
		t.Errorf("WithHostTuning changed %q, want napi_defer_hard_irqs 3 and gro_flush_timeout 50000", diff)
	}
	if info := d.Info(); len(info.Tuning) != 2 {
		t.Errorf("Info().Tuning = %q, want the two NAPI changes", info.Tuning)
	}
	d.Close()
	if diff := before.Diff(snapshot(t, p.B)); diff != nil {
		t.Errorf("after Close of a tuned device: %q", diff)
	}
}
