package afxdp_test

import (
	"encoding/binary"
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// faultEtherType marks the frames these tests send.
const faultEtherType = 0x88b6

var faultSteering = afxdp.WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(faultEtherType)}})

// faultFrame writes a broadcast test frame of n bytes carrying seq.
func faultFrame(b []byte, seq uint32, n int) int {
	b = b[:n]
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 2})
	binary.BigEndian.PutUint16(b[12:], faultEtherType)
	binary.BigEndian.PutUint32(b[14:], seq)
	return n
}

// faultPair is a veth pair for a fault test, with BPF checked.
func faultPair(t *testing.T, opts ...netns.Option) *netns.Pair {
	t.Helper()
	testenv.NeedBPF(t)
	return netns.New(t, opts...)
}

// linkDo changes h's link through netlink inside its namespace.
func linkDo(t *testing.T, h *netns.Host, fn func(netlink.Link) error) {
	t.Helper()
	if err := h.Do(func() error {
		l, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		return fn(l)
	}); err != nil {
		t.Fatalf("%s: %v", h.Link, err)
	}
}

// wantSentinel fails unless err is an *OpError matching every sentinel.
func wantSentinel(t *testing.T, what string, err error, sentinels ...error) {
	t.Helper()
	var oe *packetio.OpError
	if !errors.As(err, &oe) {
		t.Errorf("%s: %v is not a *packetio.OpError", what, err)
	}
	for _, s := range sentinels {
		if !errors.Is(err, s) {
			t.Errorf("%s: %v does not match %v", what, err, s)
		}
	}
}

// countRx takes test frames off every receive queue of d until want
// arrived or timeout passed, and returns how many arrived.
func countRx(d *afxdp.Device, want int, timeout time.Duration) int {
	got := 0
	deadline := time.Now().Add(timeout)
	for got < want && time.Now().Before(deadline) {
		for i := range d.NumRxQueues() {
			q := d.RxQueue(i)
			q.Fill(q.NumFreeFillSlots())
			_, _ = q.Poll(5 * time.Millisecond)
			descs := q.Receive(256)
			for _, ds := range descs {
				if b := q.Region().Frame(ds); len(b) >= 18 && binary.BigEndian.Uint16(b[12:]) == faultEtherType {
					got++
				}
			}
			q.Recycle(descs)
		}
	}
	return got
}

// TestFaultDeviceGone: deleting the veth under an open device is reported,
// not swallowed. A Poll blocked with no timeout, and one with a long
// timeout, return within a second with ErrDeviceGone (which wraps
// ErrQueueFailed); Err says so on both queues even when nothing else is
// called; SendFunc refuses, Transmit and Fill take nothing, Stats stays
// readable; every frame offered is accounted for.
func TestFaultDeviceGone(t *testing.T) {
	for _, m := range modes {
		// "idle poll" has no transmit traffic, so no kick can find the
		// loss first: Poll must find it by itself.
		for _, watcher := range []string{"poll", "err", "idle poll"} {
			t.Run(m.name+"/"+watcher, func(t *testing.T) {
				p := faultPair(t)
				d := openOn(t, p.B, faultSteering, m.opt)
				rx, tx := d.RxQueue(0), d.TxQueue(0)
				rx.Fill(rx.NumFreeFillSlots())

				// Traffic in flight when the link goes.
				var offered, accepted, handedBack int
				stopTx := make(chan struct{})
				txDone := make(chan struct{})
				go func() {
					defer close(txDone)
					if watcher == "idle poll" {
						return
					}
					seq := uint32(0)
					for {
						select {
						case <-stopTx:
							return
						default:
						}
						tx.Complete(tx.NumCompleted())
						descs := tx.Alloc(32)
						for i := range descs {
							descs[i].Len = uint32(faultFrame(tx.Region().Writable(descs[i]), seq, 64))
							seq++
						}
						offered += len(descs)
						n := tx.Transmit(descs)
						accepted += n
						handedBack += len(descs) - n
						tx.Free(descs[n:])
						time.Sleep(200 * time.Microsecond)
					}
				}()

				type result struct {
					err error
					at  time.Time
				}
				results := make(chan result, 2)
				var wg sync.WaitGroup
				switch watcher {
				case "poll", "idle poll":
					for _, timeout := range []time.Duration{-1, time.Hour} {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for {
								_, err := rx.Poll(timeout)
								if err != nil {
									results <- result{err, time.Now()}
									return
								}
								rx.Recycle(rx.Receive(256))
							}
						}()
					}
				case "err":
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							if err := rx.Err(); err != nil {
								results <- result{err, time.Now()}
								return
							}
							time.Sleep(time.Millisecond)
						}
					}()
				}
				time.Sleep(100 * time.Millisecond)
				deleted := time.Now()
				linkDo(t, p.A, netlink.LinkDel)
				want := 2
				if watcher == "err" {
					want = 1
				}
				for range want {
					select {
					case r := <-results:
						lat := r.at.Sub(deleted)
						t.Logf("%s: first error after %v: %v", watcher, lat, r.err)
						wantSentinel(t, watcher, r.err, packetio.ErrDeviceGone, packetio.ErrQueueFailed)
						if lat > time.Second {
							t.Errorf("%s saw the loss after %v, want within 1s", watcher, lat)
						}
					case <-time.After(2 * time.Second):
						t.Fatalf("%s: nothing 2s after the link was deleted (Err %v)", watcher, rx.Err())
					}
				}
				wg.Wait()
				close(stopTx)
				<-txDone

				wantSentinel(t, "rx.Err", rx.Err(), packetio.ErrDeviceGone)
				wantSentinel(t, "tx.Err", tx.Err(), packetio.ErrDeviceGone)
				_, err := rx.Poll(0)
				wantSentinel(t, "Poll after", err, packetio.ErrDeviceGone)
				n, err := tx.SendFunc(8, func(i int, frame []byte) int { return faultFrame(frame, 0, 64) })
				if n != 0 {
					t.Errorf("SendFunc sent %d on a deleted device", n)
				}
				wantSentinel(t, "SendFunc", err, packetio.ErrDeviceGone)
				descs := tx.Alloc(4)
				for i := range descs {
					descs[i].Len = 64
				}
				if n := tx.Transmit(descs); n != 0 {
					t.Errorf("Transmit took %d on a deleted device", n)
				}
				tx.Free(descs)
				if n := rx.Fill(64); n != 0 {
					t.Errorf("Fill posted %d on a deleted device", n)
				}
				ts, err := tx.Stats()
				if err != nil {
					t.Errorf("tx Stats: %v", err)
				}
				if _, err := rx.Stats(); err != nil {
					t.Errorf("rx Stats: %v", err)
				}
				inFlight := tx.NumInFlight()
				t.Logf("offered %d: accepted %d (stats %d), handed back %d, refused %d, completed %d, in flight %d",
					offered, accepted, ts.Packets, handedBack, ts.Refused, ts.Completed, inFlight)
				if ts.Packets != uint64(accepted) || accepted+handedBack != offered || ts.Completed+uint64(inFlight) != ts.Packets {
					t.Errorf("frames do not add up: offered %d accepted %d (stats %d) handed back %d completed %d in flight %d",
						offered, accepted, ts.Packets, handedBack, ts.Completed, inFlight)
				}
			})
		}
	}
}

// TestFaultLinkDownUp: with the link down the kernel takes nothing (the
// kick answers ENETDOWN) and the queue stays healthy; once the link is up
// again, what waited on the ring goes out with no new batch, just the
// driver loop's Complete calls.
func TestFaultLinkDownUp(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := faultPair(t)
			rxd := openOn(t, p.B, faultSteering)
			txd := openOn(t, p.A, faultSteering, m.opt)
			tx := txd.TxQueue(0)
			send := func(first uint32, n int) int {
				k, err := tx.SendFunc(n, func(i int, frame []byte) int { return faultFrame(frame, first+uint32(i), 64) })
				if err != nil {
					t.Fatalf("SendFunc: %v", err)
				}
				return k
			}
			if k := send(0, 16); k != 16 || countRx(rxd, 16, 2*time.Second) != 16 {
				t.Fatalf("the link carries nothing before the fault")
			}
			linkDo(t, p.A, netlink.LinkSetDown)
			queued := send(100, 16)
			if queued != 16 {
				t.Fatalf("queued %d of 16 with the link down", queued)
			}
			time.Sleep(50 * time.Millisecond)
			if tx.NumInFlight() != 16 {
				t.Errorf("in flight %d with the link down, want 16", tx.NumInFlight())
			}
			if err := tx.Err(); err != nil {
				t.Errorf("Err with the link down: %v (down is not dead)", err)
			}
			linkDo(t, p.A, netlink.LinkSetUp)
			up := time.Now()
			got := 0
			for time.Since(up) < 3*time.Second && (tx.NumInFlight() > 0 || got < queued) {
				tx.Complete(tx.NumCompleted())
				got += countRx(rxd, queued-got, 10*time.Millisecond)
			}
			st, _ := tx.Stats()
			t.Logf("after up: %d of %d arrived in %v, in flight %d, link_down kicks %d", got, queued, time.Since(up), tx.NumInFlight(), st.Backend["link_down"])
			if got != queued || tx.NumInFlight() != 0 {
				t.Errorf("after the link came back %d of %d frames arrived, %d still in flight", got, queued, tx.NumInFlight())
			}
			if err := tx.Err(); err != nil {
				t.Errorf("Err after up: %v", err)
			}
			// The receive side of the link that went down and up
			// receives again.
			if err := txd.RxQueue(0).Err(); err != nil {
				t.Errorf("rx Err after up: %v", err)
			}
			back, err := rxd.TxQueue(0).SendFunc(16, func(i int, frame []byte) int { return faultFrame(frame, 500+uint32(i), 64) })
			if err != nil || back != 16 {
				t.Fatalf("SendFunc back: %d, %v", back, err)
			}
			if got := countRx(txd, back, 2*time.Second); got != back {
				t.Errorf("the queue that went down and up received %d of %d", got, back)
			}
		})
	}
}

// TestFaultOversizeFrame: a frame longer than the link carries (MTU +
// Ethernet + VLAN header) but inside its frame ends Transmit's prefix and
// stays the caller's, counted in Refused; SendFunc abandons a batch whose
// build returns such a length with ErrBadLength; the good frames behind it
// go and every frame comes home.
func TestFaultOversizeFrame(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := faultPair(t)
			rxd := openOn(t, p.B, faultSteering)
			txd := openOn(t, p.A, faultSteering, m.opt)
			tx := txd.TxQueue(0)
			const limit = 1500 + 14 + 4
			descs := tx.Alloc(3)
			if len(descs) != 3 {
				t.Fatalf("Alloc(3) gave %d", len(descs))
			}
			for i, n := range []int{limit + 1, 64, 64} {
				descs[i].Len = uint32(faultFrame(tx.Region().Writable(descs[i]), uint32(i), n))
			}
			n := tx.Transmit(descs)
			if n == 0 {
				n += tx.Transmit(descs[1:])
				tx.Free(descs[:1])
			}
			deadline := time.Now().Add(time.Second)
			for tx.NumInFlight() > 0 && time.Now().Before(deadline) {
				tx.Complete(tx.NumCompleted())
				time.Sleep(time.Millisecond)
			}
			st, _ := tx.Stats()
			t.Logf("sent %d, refused %d, in flight %d, kick_busy %d", n, st.Refused, tx.NumInFlight(), st.Backend["kick_busy"])
			if n != 2 || st.Refused != 1 || st.Packets != 2 {
				t.Errorf("Transmit took %d (Packets %d) and refused %d, want the 2 good frames and 1 refused", n, st.Packets, st.Refused)
			}
			if tx.NumInFlight() != 0 {
				t.Errorf("%d frames still in flight a second later: the ring is stuck", tx.NumInFlight())
			}
			if got := countRx(rxd, 2, 2*time.Second); got != 2 {
				t.Errorf("%d of the 2 good frames arrived", got)
			}
			k, err := tx.SendFunc(2, func(i int, frame []byte) int { return faultFrame(frame, 10, limit+1) })
			if k != 0 {
				t.Errorf("SendFunc sent %d oversize frames", k)
			}
			wantSentinel(t, "SendFunc", err, packetio.ErrBadLength)
			if k, err := tx.SendFunc(2, func(i int, frame []byte) int { return faultFrame(frame, 20, limit) }); k != 2 || err != nil {
				t.Errorf("SendFunc of %d-byte frames: %d, %v", limit, k, err)
			}
			if got := countRx(rxd, 2, 2*time.Second); got != 2 {
				t.Errorf("%d of the 2 full-size frames arrived", got)
			}
			if err := tx.Err(); err != nil {
				t.Errorf("Err: %v", err)
			}
			if mx := txd.Capabilities().MaxTxLen; mx != limit {
				t.Errorf("MaxTxLen %d, want %d", mx, limit)
			}
		})
	}
}

// TestFaultKernelDropDoesNotStrand: when the kernel drops the frame at the
// head of the ring (the peer's MTU shrank after Open, so the up-front check
// passes it), the kick answers EBUSY; the good frames behind it must still
// go with nothing but the driver loop's Complete calls, not wait forever
// for a new batch.
func TestFaultKernelDropDoesNotStrand(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := faultPair(t)
			rxd := openOn(t, p.B, faultSteering)
			txd := openOn(t, p.A, faultSteering, m.opt)
			linkDo(t, p.B, func(l netlink.Link) error { return netlink.LinkSetMTU(l, 1000) })
			tx := txd.TxQueue(0)
			descs := tx.Alloc(3)
			for i, n := range []int{1200, 64, 64} {
				descs[i].Len = uint32(faultFrame(tx.Region().Writable(descs[i]), uint32(i), n))
			}
			if n := tx.Transmit(descs); n != 3 {
				t.Fatalf("Transmit took %d of 3", n)
			}
			deadline := time.Now().Add(time.Second)
			for tx.NumInFlight() > 0 && time.Now().Before(deadline) {
				tx.Complete(tx.NumCompleted())
				time.Sleep(time.Millisecond)
			}
			st, _ := tx.Stats()
			t.Logf("in flight %d, completed %d, kick_busy %d", tx.NumInFlight(), st.Completed, st.Backend["kick_busy"])
			if tx.NumInFlight() != 0 {
				t.Errorf("%d frames stranded on the ring behind the dropped one", tx.NumInFlight())
			}
			if got := countRx(rxd, 2, 2*time.Second); got != 2 {
				t.Errorf("%d of the 2 good frames arrived", got)
			}
		})
	}
}

// TestFaultZeroDesc: a zero descriptor is refused by Transmit (the prefix
// ends), Free and Recycle, and counted; no pool grows.
func TestFaultZeroDesc(t *testing.T) {
	p := faultPair(t)
	d := openOn(t, p.A, faultSteering)
	tx, rx := d.TxQueue(0), d.RxQueue(0)
	zero := []packetio.Desc{{}}
	if n := tx.Transmit(zero); n != 0 {
		t.Errorf("Transmit took a zero descriptor")
	}
	txFree, rxFree := tx.NumFreeFrames(), rx.NumFreeFrames()
	tx.Free(zero)
	rx.Recycle(zero)
	ts, _ := tx.Stats()
	rs, _ := rx.Stats()
	if tx.NumFreeFrames() != txFree || rx.NumFreeFrames() != rxFree {
		t.Errorf("a zero descriptor went into a pool: tx %d -> %d, rx %d -> %d", txFree, tx.NumFreeFrames(), rxFree, rx.NumFreeFrames())
	}
	if ts.Refused != 2 {
		t.Errorf("Refused %d, want 2 (Transmit and Free)", ts.Refused)
	}
	if rs.Backend["pool_rejected"] < 1 {
		t.Errorf("Recycle of a zero descriptor not counted: pool_rejected %d", rs.Backend["pool_rejected"])
	}
	// Transmit-only: no frame is handed out as the zero descriptor.
	p2 := faultPair(t)
	d2 := openOn(t, p2.A, afxdp.WithTransmitOnly())
	q := d2.TxQueue(0)
	for _, ds := range q.Alloc(q.NumFreeFrames()) {
		if ds.Addr == 0 {
			t.Fatalf("Alloc handed out address 0, indistinguishable from an unset descriptor")
		}
	}
}

// TestFaultRxCloseWakesPoll: closing a receive queue (not the device)
// wakes every Poll blocked on it at once with ErrClosed.
func TestFaultRxCloseWakesPoll(t *testing.T) {
	p := faultPair(t)
	d := openOn(t, p.A, faultSteering)
	rx := d.RxQueue(0)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := rx.Poll(-1)
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond)
	closed := time.Now()
	if err := rx.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var lat []time.Duration
	for range 2 {
		select {
		case err := <-errs:
			lat = append(lat, time.Since(closed))
			wantSentinel(t, "Poll", err, packetio.ErrClosed)
		case <-time.After(time.Second):
			t.Fatalf("Poll still blocked a second after RxQueue.Close")
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if lat[1] > 100*time.Millisecond {
		t.Errorf("Close woke Poll after %v, want at once", lat[1])
	}
	wantSentinel(t, "Err", rx.Err(), packetio.ErrClosed)
	// The transmit side of the socket is untouched.
	if k, err := d.TxQueue(0).SendFunc(1, func(i int, frame []byte) int { return faultFrame(frame, 0, 64) }); k != 1 || err != nil {
		t.Errorf("SendFunc after RxQueue.Close: %d, %v", k, err)
	}
}

// TestFaultRegionAfterClose: a frame slice taken before Close stays safe
// to read and write after it (the memory reads zeros instead of being
// unmapped), the Region hands out nothing more, and opening and closing
// in a loop does not grow the resident set.
func TestFaultRegionAfterClose(t *testing.T) {
	p := faultPair(t)
	var d *afxdp.Device
	if err := p.A.Do(func() (err error) {
		d, err = afxdp.Open(p.A.Link, faultSteering)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tx := d.TxQueue(0)
	r := tx.Region()
	descs := tx.Alloc(1)
	descs[0].Len = 64
	frame := r.Frame(descs[0])
	all := r.Bytes()
	faultFrame(frame, 7, 64)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Touch the stale slices: a fault here kills the test binary.
	if frame[0] != 0 || all[len(all)-1] != 0 {
		t.Errorf("stale frame reads %#x, %#x after Close, want zeros", frame[0], all[len(all)-1])
	}
	frame[0] = 1
	all[len(all)/2] = 1
	if r.Frame(descs[0]) != nil || r.Writable(descs[0]) != nil || r.Bytes() != nil {
		t.Errorf("the Region hands out memory after Close")
	}

	rss := func() int {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				return kb
			}
		}
		t.Fatal("no VmRSS")
		return 0
	}
	cycle := func() {
		var d *afxdp.Device
		if err := p.A.Do(func() (err error) {
			d, err = afxdp.Open(p.A.Link, faultSteering)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		q := d.TxQueue(0)
		_ = q.Region().Frame(packetio.Desc{Addr: 0, Len: 64})
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		cycle()
	}
	time.Sleep(100 * time.Millisecond) // the kernel frees a UMEM from deferred work
	before := rss()
	const cycles = 20
	for range cycles {
		cycle()
	}
	time.Sleep(100 * time.Millisecond)
	after := rss()
	t.Logf("RSS %d KiB -> %d KiB over %d open/close cycles of a %d KiB UMEM", before, after, cycles, len(all)/1024)
	if after-before > len(all)/1024 {
		t.Errorf("RSS grew %d KiB over %d cycles: the frame memory is not given back", after-before, cycles)
	}
}
