package afxdp_test

import (
	"testing"
	"time"

	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestBusyPoll: WithBusyPoll reaches the kernel (Info reads the socket
// options back), and a loop that never sleeps in Poll still receives every
// frame: the zero-timeout Poll is what drives the queue's NAPI.
func TestBusyPoll(t *testing.T) {
	testenv.NeedBPF(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := netns.New(t)
			d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024), afxdp.WithBusyPoll(50, 64), m.opt)
			if got, want := d.Info().BusyPoll, "50us budget 64, preferred"; got != want {
				t.Fatalf("Info().BusyPoll = %q, want %q", got, want)
			}
			peer := openOn(t, p.B, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024), m.opt)
			rx := d.RxQueue(0)
			rx.Fill(rx.NumFreeFillSlots())
			const want = 200
			sent := 0
			for sent < want {
				sent += sendTestFrames(t, peer.TxQueue(0), min(16, want-sent))
			}
			got := 0
			for deadline := time.Now().Add(5 * time.Second); got < sent && time.Now().Before(deadline); {
				if _, err := rx.Poll(0); err != nil {
					t.Fatal(err)
				}
				descs := rx.Receive(64)
				got += len(descs)
				rx.Recycle(descs)
				rx.Fill(rx.NumFreeFillSlots())
			}
			if got != sent {
				t.Fatalf("received %d of %d frames busy-polling", got, sent)
			}
			if d.Info().BusyPoll == "off" {
				t.Fatal("busy-poll reported off")
			}
		})
	}
	t.Run("default is off", func(t *testing.T) {
		p := netns.New(t)
		d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
		if got := d.Info().BusyPoll; got != "off" {
			t.Fatalf("Info().BusyPoll = %q without WithBusyPoll, want off", got)
		}
		if d.Capabilities().RxTimestamps {
			t.Fatal("Capabilities().RxTimestamps without WithTimestamps")
		}
		if got := d.Info().Timestamps; got != "off" {
			t.Fatalf("Info().Timestamps = %q without WithTimestamps, want off", got)
		}
	})
}
