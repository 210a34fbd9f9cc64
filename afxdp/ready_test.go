package afxdp_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// TestReadyNotifier follows the packetio.ReadyNotifier protocol by hand:
// the ready descriptor polls readable once a frame is on the receive ring,
// Arm counts it, and Close of the device fires the closed descriptor (kept
// open here by a duplicate, as package waitset does) and makes ReadyFDs
// refuse.
func TestReadyNotifier(t *testing.T) {
	pair := netns.New(t)
	rxDev := opener(pair.B)(t)
	txDev := opener(pair.A)(t)
	t.Cleanup(func() { rxDev.Close(); txDev.Close() })
	if !rxDev.Capabilities().ReadyFD {
		t.Fatal("ReadyFD false")
	}
	q := rxDev.RxQueue(0)
	rn, ok := q.(packetio.ReadyNotifier)
	if !ok {
		t.Fatal("RxQueue does not implement ReadyNotifier")
	}
	ready, closed, err := rn.ReadyFDs()
	if err != nil {
		t.Fatal(err)
	}
	dup, err := unix.FcntlInt(uintptr(closed), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(dup) })
	q.Fill(q.NumFreeFillSlots())
	frame := make([]byte, 64)
	copy(frame, pair.B.MAC)
	frame[12], frame[13] = 0x88, 0xb5 // packetiotest.EtherType
	if n, err := txDev.TxQueue(0).SendFunc(1, func(_ int, f []byte) int { return copy(f, frame) }); n != 1 || err != nil {
		t.Fatalf("SendFunc = %d, %v", n, err)
	}
	pfd := []unix.PollFd{{Fd: int32(ready), Events: unix.POLLIN}, {Fd: int32(dup), Events: unix.POLLIN}}
	for rn.Arm() == 0 {
		if _, err := unix.Poll(pfd, 5000); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		if pfd[1].Revents != 0 {
			t.Fatal("closed fired on an open queue")
		}
		if pfd[0].Revents == 0 {
			t.Fatal("nothing polled readable within 5 s")
		}
	}
	q.Recycle(q.Receive(64))
	rxDev.Close()
	if n, _ := unix.Poll(pfd[1:], 0); n != 1 {
		t.Error("closed does not poll readable after the device closed")
	}
	if _, _, err := rn.ReadyFDs(); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("ReadyFDs after Close: %v, want ErrClosed", err)
	}
	if rn.Arm() != 0 {
		t.Error("Arm after Close is not 0")
	}
}
