//go:build linux

package afpacket

import (
	"bytes"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/netns"
)

func TestIntegrationSendAndReceive(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, WithTxQueues(0))
	var frames [][]byte
	for i := range 64 {
		frames = append(frames, testFrame(t, pair.B.MAC, uint32(i), 60+i*20))
	}
	sendFrames(t, a.TxQueue(0), frames)
	got := receiveOurs(t, b.RxQueue(0), len(frames), 3*time.Second)
	if len(got) != len(frames) {
		t.Fatalf("received %d of %d frames", len(got), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Fatalf("frame %d differs:\n got %x\nwant %x", i, got[i], frames[i])
		}
	}
	st, _ := a.TxQueue(0).Stats()
	if st.Packets != 64 || st.Completed != 64 || st.Errors != 0 {
		t.Errorf("tx stats %+v", st)
	}
}
