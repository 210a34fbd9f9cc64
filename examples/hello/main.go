// Command hello sends a few frames and receives them, in both directions, to
// show the whole packetio model in about a hundred lines, on both pure-Go
// backends: afpacket (works anywhere) and afxdp (AF_XDP, with a steering
// filter that takes only hello's own frames, so the kernel keeps the rest).
//
// With no -i it needs root and builds its own test bed: a veth pair between
// two throwaway network namespaces, gone when it exits (even if killed). It
// sends -n frames from end A to end B and back from B to A on each backend,
// and exits 0 only if every frame arrived. With -i it uses that interface
// (yours to name; it touches no other), sends -n broadcast frames and shows
// what arrives in -wait. -backend picks one backend.
//
//	sudo go run ./examples/hello
//	sudo go run ./examples/hello -backend afxdp
//	sudo go run ./examples/hello -i veth0 -n 4
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
)

// backends are the pure-Go backends hello shows, in order.
var backends = []string{"afpacket", "afxdp"}

// open opens iface on one backend. afxdp must be told what to take: only
// hello's EtherType, so everything else stays with the kernel.
func open(backend, iface string) (packetio.Device, error) {
	if backend == "afxdp" {
		return afxdp.Open(iface, afxdp.WithSteering(packetio.SteeringFilter{
			Match: []packetio.Match{packetio.MatchEtherType(etherType)}}), afxdp.WithFrames(1024))
	}
	return afpacket.Open(iface)
}

const etherType = 0x88b5 // IEEE local experimental: no host stack claims it

func main() {
	iface := flag.String("i", "", "interface to use (default: make a veth pair in throwaway namespaces)")
	n := flag.Int("n", 8, "frames to send each way")
	wait := flag.Duration("wait", time.Second, "how long to wait for frames to arrive")
	only := flag.String("backend", "", "afpacket or afxdp (default: both, one after the other)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: hello [-i IFACE] [-n N] [-wait D] [-backend afpacket|afxdp]\n\nSends N frames and receives them, with packetio's pure-Go backends.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	names := backends
	switch *only {
	case "":
	case "afpacket", "afxdp":
		names = []string{*only}
	default:
		fmt.Fprintf(os.Stderr, "hello: -backend %q: afpacket or afxdp\n", *only)
		os.Exit(2)
	}
	if err := runAll(names, *iface, *n, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

// runAll runs the round trip on each backend in turn.
func runAll(names []string, iface string, n int, wait time.Duration) error {
	for _, b := range names {
		fmt.Printf("== %s ==\n", b)
		if err := run(b, iface, n, wait); err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
	}
	return nil
}

func run(backend, iface string, n int, wait time.Duration) error {
	if n < 1 || n > 1024 {
		return fmt.Errorf("-n %d: send between 1 and 1024 frames", n)
	}
	if iface != "" {
		d, err := open(backend, iface)
		if err != nil {
			return err
		}
		defer d.Close()
		fmt.Printf("on %s, which you named\n", iface)
		showCapabilities(d.Capabilities())
		got, err := roundTrip(d, d, iface, iface, n, wait)
		fmt.Printf("%d frames seen coming back (none is normal on a real link)\n", got)
		return err
	}

	fmt.Println("making a veth pair between two throwaway network namespaces (needs root)")
	pair, err := netns.Create()
	if err != nil {
		return err
	}
	defer pair.Close()
	var a, b packetio.Device
	defer func() {
		for _, d := range []packetio.Device{a, b} {
			if d != nil {
				d.Close()
			}
		}
	}()
	// Ctrl-C: close everything through the deferred calls above.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			pair.Close()
			os.Exit(130)
		}
	}()

	if err := pair.A.Do(func() (err error) { a, err = open(backend, pair.A.Link); return err }); err != nil {
		return err
	}
	if err := pair.B.Do(func() (err error) { b, err = open(backend, pair.B.Link); return err }); err != nil {
		return err
	}
	fmt.Printf("A is %s, B is %s, both opened with %s\n", pair.A.Link, pair.B.Link, backend)
	showCapabilities(a.Capabilities())
	ab, err := roundTrip(a, b, "A", "B", n, wait)
	if err != nil {
		return err
	}
	ba, err := roundTrip(b, a, "B", "A", n, wait)
	if err != nil {
		return err
	}
	if ab != n || ba != n {
		return fmt.Errorf("A->B %d of %d arrived, B->A %d of %d", ab, n, ba, n)
	}
	fmt.Println("every frame arrived both ways; cleaning up")
	return nil
}

// roundTrip sends n frames on from's first transmit queue and counts those
// that reach to's first receive queue within wait.
func roundTrip(from, to packetio.Device, fromName, toName string, n int, wait time.Duration) (int, error) {
	rx := to.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots()) // give the NIC somewhere to put packets
	src := [6]byte{0x02, 0x70, 0x69, 0x6f, 0, 1}

	tx := from.TxQueue(0)
	sent, err := tx.SendFunc(n, func(i int, frame []byte) int {
		copy(frame[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		copy(frame[6:12], src[:])
		frame[12], frame[13] = etherType>>8, etherType&0xff
		n := 14 + copy(frame[14:], fmt.Sprintf("hello #%d from %s", i, fromName))
		for ; n < 60; n++ { // pad to the Ethernet minimum
			frame[n] = 0
		}
		return n
	})
	if err != nil {
		return 0, err
	}
	fmt.Printf("%s sent %d frames of 60 bytes, broadcast, EtherType %#04x\n", fromName, sent, etherType)

	got := 0
	for deadline := time.Now().Add(wait); got < sent && time.Now().Before(deadline); {
		if _, err := rx.Poll(50 * time.Millisecond); err != nil {
			return got, err
		}
		descs := rx.Receive(64)
		for _, d := range descs {
			f := rx.Region().Frame(d) // the bytes, where they landed
			if len(f) > 14 && f[12] == etherType>>8 && f[13] == etherType&0xff {
				got++
				fmt.Printf("  %s got %d bytes: %q\n", toName, len(f), bytes.TrimRight(f[14:], "\x00"))
			}
		}
		rx.Recycle(descs)              // give the frames back
		rx.Fill(rx.NumFreeFillSlots()) // and re-arm
	}
	tx.Complete(tx.NumInFlight())
	if got < sent && to != from {
		return got, fmt.Errorf("%d of %d frames did not arrive at %s", sent-got, sent, toName)
	}
	return got, nil
}

// showCapabilities prints what the device really does, one line per fact.
func showCapabilities(c packetio.Capabilities) {
	fmt.Printf("capabilities of the %s backend:\n", c.Backend)
	for _, f := range []struct {
		on   bool
		what string
	}{
		{c.ZeroCopy, "zero-copy to and from the NIC"},
		{c.KernelCoexistence, "the kernel keeps the interface"},
		{c.SharedRegion, "one region for every queue"},
		{c.HandsBackFrames, "Reclaim hands sent frames back (forwarding in place)"},
		{c.BlockingPoll, "Poll sleeps, and Close wakes it"},
		{c.RxTimestamps, "receive timestamps"},
		{c.GatherTx, "transmit from your own memory (GatherTransmitter)"},
		{c.Offload, "segmentation offload metadata both ways"},
		{c.RSS, "flows spread over receive queues"},
	} {
		mark := "no "
		if f.on {
			mark = "yes"
		}
		fmt.Printf("  %s  %s\n", mark, f.what)
	}
	fmt.Printf("  largest packet per frame %d bytes, up to %d queues\n", c.MaxFrameSize, c.MaxQueues)
}
