//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"testing"
	"time"

	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/host/hosttest"
	"github.com/packetio/packetio/internal/netns"
)

// TestDefaultOpenChangesNothingOnTheHost: DPDK's net_af_packet and
// net_af_xdp drivers on a veth, opened with default options, queues driven,
// and closed, leave the interface's NAPI settings, every interrupt's CPUs,
// its private flags and the thread's CPU mask as they were.
func TestDefaultOpenChangesNothingOnTheHost(t *testing.T) {
	for drv, opts := range map[string][]Option{"net_af_packet": small(), "net_af_xdp": afxdpOpts()} {
		t.Run(drv, func(t *testing.T) {
			p := netns.New(t)
			snap := func() host.Snapshot { return hosttest.Snapshot(t, p.A) }
			before := snap()
			d, err := openIn(t, p.A, drv+"0,iface="+p.A.Link, opts...)
			if err != nil {
				t.Fatalf("Open %s on %s: %v", drv, p.A.Link, err)
			}
			rx, tx := d.RxQueue(0), d.TxQueue(0)
			rx.Fill(rx.NumFreeFillSlots())
			if _, err := rx.Poll(time.Millisecond); err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if _, err := tx.SendFunc(1, func(int, []byte) int { return 60 }); err != nil {
				t.Fatalf("SendFunc: %v", err)
			}
			if diff := before.Diff(snap()); diff != nil {
				t.Errorf("Open changed the host while open: %q", diff)
			}
			if err := p.A.Do(d.Close); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if diff := before.Diff(snap()); diff != nil {
				t.Errorf("Open and Close changed the host: %q", diff)
			}
		})
	}
}
