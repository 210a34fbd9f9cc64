package afpacket

import (
	"testing"
	"time"

	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/host/hosttest"
	"github.com/packetio/packetio/internal/netns"
)

// TestDefaultOpenChangesNothingOnTheHost: Open, queues driven, and Close
// leave the interface's NAPI settings, every interrupt's CPUs, its private
// flags and the thread's CPU mask as they were.
func TestDefaultOpenChangesNothingOnTheHost(t *testing.T) {
	p := netns.New(t)
	snap := func() host.Snapshot { return hosttest.Snapshot(t, p.A) }
	before := snap()
	d := openIn(t, p.A)
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	if _, err := rx.Poll(time.Millisecond); err != nil {
		t.Fatalf("Poll: %v", err)
	}
	if _, err := tx.SendFunc(1, func(int, []byte) int { return 60 }); err != nil {
		t.Fatalf("SendFunc: %v", err)
	}
	if diff := before.Diff(snap()); diff != nil {
		t.Errorf("Open changed the host while open: %q", diff)
	}
	d.Close()
	if diff := before.Diff(snap()); diff != nil {
		t.Errorf("Open and Close changed the host: %q", diff)
	}
}
