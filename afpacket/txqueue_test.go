//go:build linux

package afpacket

import (
	"errors"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// fakeTx is a TxQueue over heap memory whose "kernel" is a script: each
// sendmmsg call takes the next step (how many it takes, or an errno).
type step struct {
	take  int
	errno unix.Errno
}

func fakeTx(t *testing.T, frames int, steps ...step) (*TxQueue, *int) {
	return fakeTxMode(t, frames, false, steps...)
}

func fakeTxMode(t *testing.T, frames int, multi bool, steps ...step) (*TxQueue, *int) {
	t.Helper()
	const fs = 2048
	p, err := pool.New(0, frames, fs)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegion(make([]byte, 2*frames*fs), fs) // a second half no pool owns: "another queue"
	q := newTxQueue(&Device{name: "fake0"}, 0, -1, reg, p, false, multi)
	calls := 0
	old := sendmmsgFn
	sendmmsgFn = func(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
		calls++
		if len(steps) == 0 {
			return len(msgs), 0
		}
		s := steps[0]
		steps = steps[1:]
		if s.errno != 0 {
			return 0, s.errno
		}
		return min(s.take, len(msgs)), 0
	}
	t.Cleanup(func() { sendmmsgFn = old })
	return q, &calls
}

func allocLen(q *TxQueue, n int) []packetio.Desc {
	ds := append([]packetio.Desc(nil), q.Alloc(n)...)
	for i := range ds {
		ds[i].Len = 64
	}
	return ds
}

func TestTransmitBackPressure(t *testing.T) {
	for _, errno := range []unix.Errno{unix.EAGAIN, unix.ENOBUFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			q, calls := fakeTx(t, 64, step{take: 5}, step{errno: errno})
			ds := allocLen(q, 10)
			n, err := q.transmit(ds, nil)
			if n != 5 || err != nil {
				t.Fatalf("transmit: %d, %v; want 5, nil", n, err)
			}
			if *calls != 2 {
				t.Fatalf("%d sendmmsg calls: back-pressure must not be retried", *calls)
			}
			if q.Err() != nil || q.NumInFlight() != 5 {
				t.Fatalf("Err %v, in flight %d", q.Err(), q.NumInFlight())
			}
			// The rest is still the caller's; the next call takes it.
			if n := q.Transmit(ds[5:]); n != 5 {
				t.Fatalf("retry took %d", n)
			}
			st, _ := q.Stats()
			if st.Backend["eagain"] != 1 || st.Packets != 10 || st.Errors != 0 || st.Batches != 3 {
				t.Fatalf("stats %+v", st)
			}
			// A call that queues nothing is RingFull.
			q2, _ := fakeTx(t, 64, step{errno: errno})
			if n := q2.Transmit(allocLen(q2, 4)); n != 0 {
				t.Fatal("took frames the kernel refused")
			}
			if st, _ := q2.Stats(); st.RingFull != 1 {
				t.Fatalf("RingFull %d", st.RingFull)
			}
		})
	}
}

func TestTransmitEINTRIsBounded(t *testing.T) {
	var steps []step
	for range 2 * maxStalls {
		steps = append(steps, step{errno: unix.EINTR})
	}
	q, calls := fakeTx(t, 64, steps...)
	if n := q.Transmit(allocLen(q, 4)); n != 0 {
		t.Fatalf("took %d", n)
	}
	if *calls != maxStalls+1 {
		t.Fatalf("%d calls, want %d", *calls, maxStalls+1)
	}
	q, _ = fakeTx(t, 64, step{errno: unix.EINTR}, step{take: 4})
	if n := q.Transmit(allocLen(q, 4)); n != 4 {
		t.Fatalf("after one EINTR took %d", n)
	}
}

func TestTransmitKernelRefusals(t *testing.T) {
	// A frame the kernel refuses outright is lost, counted, and skipped.
	q, _ := fakeTx(t, 64, step{take: 2}, step{errno: unix.EMSGSIZE})
	ds := allocLen(q, 4)
	if n := q.Transmit(ds); n != 4 {
		t.Fatalf("took %d, want 4 (one lost)", n)
	}
	st, _ := q.Stats()
	if st.Backend["dropped"] != 1 || st.Errors != 1 || st.Backend["last_errno"] != uint64(unix.EMSGSIZE) {
		t.Fatalf("stats %+v", st)
	}
	if q.Complete(1<<20) != 4 || q.NumFreeFrames() != 64 {
		t.Fatal("the lost frame did not come home")
	}
	// A vanished interface fails the queue for good.
	q, _ = fakeTx(t, 64, step{errno: unix.ENXIO})
	ds = allocLen(q, 4)
	if n := q.Transmit(ds); n != 0 {
		t.Fatalf("took %d", n)
	}
	if !errors.Is(q.Err(), packetio.ErrQueueFailed) {
		t.Fatalf("Err %v", q.Err())
	}
	if n, err := q.TransmitGather([][]byte{{1}}, []int{1}, nil); n != 0 || !errors.Is(err, packetio.ErrQueueFailed) {
		t.Fatalf("gather on a failed queue: %d, %v", n, err)
	}
	q.Free(ds)
}

func TestTransmitValidation(t *testing.T) {
	q, calls := fakeTx(t, 64)
	fs := uint64(q.reg.FrameSize())
	ds := allocLen(q, 6)
	ds[3] = packetio.Desc{Addr: ds[3].Addr, Len: uint32(fs)} // runs into the next frame
	n, err := q.transmit(ds, nil)
	if n != 3 || !errors.Is(err, packetio.ErrBadLength) {
		t.Fatalf("transmit: %d, %v; want the 3 before the bad one", n, err)
	}
	if *calls != 1 {
		t.Fatalf("%d calls", *calls)
	}
	for _, d := range []packetio.Desc{
		{Addr: 2 * 64 * fs, Len: 64}, {Addr: ^uint64(0), Len: 64}, {Addr: 0, Len: 0}, {Addr: 100, Len: ^uint32(0)},
	} {
		if n := q.Transmit([]packetio.Desc{d}); n != 0 {
			t.Errorf("%+v accepted", d)
		}
	}
	if st, _ := q.Stats(); st.Backend["rejected_descs"] != 5 {
		t.Errorf("rejected_descs %d", st.Backend["rejected_descs"])
	}
	q.Free(ds[3:])
	q.Complete(1 << 20)
	if q.NumFreeFrames() != 64 || q.pool.Rejected() != 0 {
		t.Fatalf("free %d, rejected %d", q.NumFreeFrames(), q.pool.Rejected())
	}
	// A frame of the other queue's range is refused by this pool.
	q.Free([]packetio.Desc{{Addr: 64*fs + 64}})
	if q.pool.Rejected() != 1 || q.NumFreeFrames() != 64 {
		t.Fatal("foreign frame taken")
	}
}

func TestSendFuncContract(t *testing.T) {
	q, _ := fakeTx(t, 64)
	n, err := q.SendFunc(8, func(i int, f []byte) int {
		if i == 3 {
			return len(f) + 1
		}
		return 64
	})
	if n != 0 || !errors.Is(err, packetio.ErrBadLength) || q.NumFreeFrames() != 64 || q.NumInFlight() != 0 {
		t.Fatalf("bad length: %d, %v, free %d, in flight %d", n, err, q.NumFreeFrames(), q.NumInFlight())
	}
	n, err = q.SendFunc(8, func(i int, f []byte) int { return -1 })
	if n != 0 || !errors.Is(err, packetio.ErrBadLength) || q.NumFreeFrames() != 64 {
		t.Fatalf("negative: %d, %v", n, err)
	}
	n, err = q.SendFunc(8, func(i int, f []byte) int {
		if i == 3 {
			return 0
		}
		return 64
	})
	if n != 3 || err != nil || q.NumFreeFrames()+q.NumInFlight() != 64 {
		t.Fatalf("zero stops: %d, %v, free %d, in flight %d", n, err, q.NumFreeFrames(), q.NumInFlight())
	}
	// Back-pressure inside SendFunc: the unsent tail goes home.
	q2, _ := fakeTx(t, 64, step{take: 2}, step{errno: unix.EAGAIN})
	n, err = q2.SendFunc(8, func(i int, f []byte) int { return 64 })
	if n != 2 || err != nil || q2.NumFreeFrames() != 62 || q2.NumInFlight() != 2 {
		t.Fatalf("back-pressure: %d, %v, free %d, in flight %d", n, err, q2.NumFreeFrames(), q2.NumInFlight())
	}
}

func TestAllocPendingAndReclaim(t *testing.T) {
	q, _ := fakeTx(t, 64)
	seen := map[uint64]bool{}
	ds := q.Alloc(100)
	if len(ds) != 64 {
		t.Fatalf("Alloc(100) from 64 frames: %d", len(ds))
	}
	for _, d := range ds {
		if seen[d.Addr] || d.Addr%2048 != frameHeadroom || d.Len != 0 {
			t.Fatalf("bad desc %+v", d)
		}
		seen[d.Addr] = true
	}
	if len(q.Alloc(1)) != 0 {
		t.Fatal("Alloc from an empty pool")
	}
	if st, _ := q.Stats(); st.PoolEmpty != 1 {
		t.Fatalf("PoolEmpty %d", st.PoolEmpty)
	}
	for i := range ds {
		ds[i].Len = 60
	}
	if n := q.Transmit(ds); n != 64 {
		t.Fatal(n)
	}
	back := q.Reclaim(10, nil)
	if len(back) != 10 || back[0] != ds[0] || q.NumInFlight() != 54 {
		t.Fatalf("Reclaim: %d, first %+v, in flight %d", len(back), back[0], q.NumInFlight())
	}
	q.Free(back)
	if q.Complete(1<<20) != 54 || q.NumFreeFrames() != 64 {
		t.Fatal("Complete did not return the rest")
	}
	st, _ := q.Stats()
	if st.Completed != 64 || st.Packets != 64 {
		t.Fatalf("stats %+v", st)
	}
}

// Stats and Err from another goroutine while the owner works: -race judges.
func TestTxStatsRace(t *testing.T) {
	q, _ := fakeTx(t, 64)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				q.Stats()
				q.Err()
			}
		}
	}()
	for range 500 {
		q.SendFunc(16, func(i int, f []byte) int { return 64 })
		q.Complete(1 << 20)
	}
	close(stop)
	wg.Wait()
}
