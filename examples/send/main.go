// Command send puts a few UDP frames on an interface and reports what the
// device said about them: how many it took, completed and counted as
// errors. With no -i it makes its own veth pair (root) and also shows what
// arrived at the other end.
//
//	sudo go run ./examples/send
//	sudo go run ./examples/send -i veth0 -count 10 -size 128 -dst-mac 02:00:00:00:00:02
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/testbed"
)

type options struct {
	backend, iface   string
	count, size      int
	vlan             uint
	dstMAC, srcMAC   string
	srcIP, dstIP     string
	srcPort, dstPort uint
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, needs root)")
	flag.IntVar(&o.count, "count", 1, "frames to send")
	flag.IntVar(&o.size, "size", 60, "frame size in bytes, without the 4-byte FCS")
	flag.UintVar(&o.vlan, "vlan", 0, "802.1Q VLAN ID to tag with (0: untagged)")
	flag.StringVar(&o.dstMAC, "dst-mac", "ff:ff:ff:ff:ff:ff", "destination MAC")
	flag.StringVar(&o.srcMAC, "src-mac", "02:70:69:6f:00:01", "source MAC")
	flag.StringVar(&o.srcIP, "src-ip", "10.99.0.1", "source IP (v4 or v6)")
	flag.StringVar(&o.dstIP, "dst-ip", "10.99.0.2", "destination IP")
	flag.UintVar(&o.srcPort, "src-port", 1024, "UDP source port")
	flag.UintVar(&o.dstPort, "dst-port", 9, "UDP destination port (9: discard)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: send [flags]\n\nSends -count UDP frames and reports what the device did with them.\nExit status: 0 if every frame completed (and, on its own veth pair, arrived), 1 otherwise, 2 for bad flags.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	spec, err := o.spec()
	if err != nil {
		fmt.Fprintln(os.Stderr, "send:", err)
		os.Exit(2)
	}
	if err := run(o, spec); err != nil {
		fmt.Fprintln(os.Stderr, "send:", err)
		os.Exit(1)
	}
}

func (o options) spec() (frame.Spec, error) {
	var s frame.Spec
	var err error
	if s.DstMAC, err = net.ParseMAC(o.dstMAC); err != nil {
		return s, err
	}
	if s.SrcMAC, err = net.ParseMAC(o.srcMAC); err != nil {
		return s, err
	}
	if s.SrcIP, err = netip.ParseAddr(o.srcIP); err != nil {
		return s, err
	}
	if s.DstIP, err = netip.ParseAddr(o.dstIP); err != nil {
		return s, err
	}
	if o.count < 1 || o.count > 1<<20 {
		return s, fmt.Errorf("-count %d: send 1 to %d frames", o.count, 1<<20)
	}
	if o.srcPort > 65535 || o.dstPort > 65535 {
		return s, errors.New("ports are 16 bits")
	}
	s.VLAN, s.Size = uint16(o.vlan), o.size
	s.SrcPort, s.DstPort = uint16(o.srcPort), uint16(o.dstPort)
	if o.vlan > 4094 {
		return s, fmt.Errorf("-vlan %d is above 4094", o.vlan)
	}
	return s, s.Check()
}

func run(o options, spec frame.Spec) error {
	bed, err := testbed.Setup(o.iface, os.Stdout)
	if err != nil {
		return err
	}
	defer bed.Close()
	// Transmit only: on afxdp no receive queue, so nothing is taken from
	// the kernel (afpacket, a tap, opens its receive queue anyway).
	open := func(name string) (packetio.Device, error) {
		return backend.Open(o.backend, name, backend.Config{TxQueues: 1})
	}
	d, err := bed.Open(open)
	if err != nil {
		return err
	}
	var rx packetio.RxQueue
	if bed.Own() {
		peer, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
			return backend.Open("afpacket", name, backend.Config{TxQueues: 1, RxQueues: 1})
		})
		if err != nil {
			return err
		}
		rx = peer.RxQueue(0)
		rx.Fill(rx.NumFreeFillSlots())
	}
	if spec.Len() > d.Capabilities().MaxFrameSize {
		return fmt.Errorf("a %d-byte frame does not fit the device's %d-byte frames", spec.Len(), d.Capabilities().MaxFrameSize)
	}
	tx := d.TxQueue(0)
	fmt.Printf("%s on %s: sending %d frames of %d bytes, %s:%d -> %s:%d", o.backend, bed.Name, o.count, spec.Len(), spec.SrcIP, spec.SrcPort, spec.DstIP, spec.DstPort)
	if spec.VLAN != 0 {
		fmt.Printf(", vlan %d", spec.VLAN)
	}
	fmt.Println()

	sent := 0
	deadline := time.Now().Add(2 * time.Second)
	build := func(i int, f []byte) int { return frame.Build(f, spec) }
	for sent < o.count && time.Now().Before(deadline) {
		n, err := tx.SendFunc(o.count-sent, build)
		if err != nil {
			return err
		}
		sent += n
		if n == 0 {
			if err := tx.Err(); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // the ring is full: back-pressure
		}
	}
	// Wait for the device to finish with every frame. Whether a frame
	// SendFunc built passes through Complete is the backend's business
	// (afpacket builds straight into its transmit ring and is done with it
	// when the kernel has sent it): the counters say what was completed.
	for tx.NumInFlight() > 0 && time.Now().Before(deadline) {
		if tx.Complete(1<<20) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	s, _ := tx.Stats()
	completed := int(s.Completed)
	fmt.Printf("queued %d, completed %d, %d bytes, %d batches, %d errors\n", s.Packets, s.Completed, s.Bytes, s.Batches, s.Errors)

	arrived := sent
	if rx != nil {
		arrived = 0
		for time.Now().Before(deadline.Add(time.Second)) && arrived < sent {
			rx.Poll(50 * time.Millisecond)
			descs := rx.Receive(256)
			for _, d := range descs {
				if in, ok := frame.Parse(rx.Region().Frame(d)); ok && in.DstPort == spec.DstPort && in.SrcIP == spec.SrcIP {
					arrived++
				}
			}
			rx.Recycle(descs)
			rx.Fill(rx.NumFreeFillSlots())
		}
		fmt.Printf("%d of %d arrived at %s\n", arrived, sent, bed.Peer)
	}
	if sent != o.count || completed != sent || s.Errors != 0 || arrived != sent {
		return fmt.Errorf("sent %d of %d, completed %d, %d errors, %d arrived", sent, o.count, completed, s.Errors, arrived)
	}
	fmt.Println("every frame completed without error")
	return nil
}
