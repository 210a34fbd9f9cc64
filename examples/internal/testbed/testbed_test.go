package testbed

import (
	"io"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/testenv"
)

func TestOwnBedOpensBothEnds(t *testing.T) {
	testenv.NeedRoot(t)
	b, err := Setup("", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	open := func(name string) (packetio.Device, error) { return afpacket.Open(name) }
	a, err := b.Open(open)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.OpenPeer(open)
	if err != nil {
		t.Fatal(err)
	}
	if a == nil || p == nil || !b.Own() || b.Peer == "" {
		t.Fatal("bed not set up")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestNamedBedHasNoPeer(t *testing.T) {
	b, err := Setup("lo", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if b.Own() {
		t.Fatal("a named interface is not owned")
	}
	if _, err := b.Open(func(string) (packetio.Device, error) { return nil, io.EOF }); err != io.EOF {
		t.Fatalf("Open on a named interface: %v", err)
	}
	if _, err := b.OpenPeer(nil); err == nil {
		t.Fatal("OpenPeer on a named interface succeeded")
	}
	if err := b.InPeer(func() error { return nil }); err == nil {
		t.Fatal("InPeer on a named interface succeeded")
	}
}

func TestQueuesAndGRO(t *testing.T) {
	testenv.NeedRoot(t)
	b, err := Setup("", io.Discard, WithQueues(2))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if q := queuesOf(t, b); q != 2 {
		t.Fatalf("%d receive queues, want 2", q)
	}
	for _, h := range []struct {
		in   func(func() error) error
		name string
	}{{b.In, b.Name}, {b.InPeer, b.Peer}} {
		if rx, tx := channelsOf(t, h.in, h.name); rx != 2 || tx != 2 {
			t.Errorf("%s runs %d receive and %d transmit queues, want 2 and 2", h.name, rx, tx)
		}
	}

	for _, side := range []struct {
		name string
		set  func(bool) (func() error, error)
		get  func() (bool, error)
	}{{"own", b.GRO, b.GROOn}, {"peer", b.PeerGRO, b.PeerGROOn}} {
		was, err := side.get()
		if err != nil {
			t.Fatal(err)
		}
		restore, err := side.set(!was)
		if err != nil {
			t.Fatal(err)
		}
		if now, _ := side.get(); now == was {
			t.Fatalf("%s: GRO still %v", side.name, was)
		}
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		if err := restore(); err != nil {
			t.Fatalf("second restore: %v", err)
		}
		if now, _ := side.get(); now != was {
			t.Fatalf("%s: GRO %v after restore, was %v", side.name, now, was)
		}
		// Asking for what is already there changes nothing.
		same, err := side.set(was)
		if err != nil || same() != nil {
			t.Fatalf("%s: no-op: %v", side.name, err)
		}
	}
	// A change the caller never restores is put back by Close.
	if _, err := b.GRO(true); err != nil {
		t.Fatal(err)
	}
	if len(b.undo) != 3 {
		t.Fatalf("%d changes recorded, want 3", len(b.undo))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GRO(true); err == nil {
		t.Fatal("GRO changed on a closed bed")
	}
}

// TestOneQueueBothEnds: a pair made without a count runs one queue each
// way at both ends, whatever the CPU count.
func TestOneQueueBothEnds(t *testing.T) {
	testenv.NeedRoot(t)
	b, err := Setup("", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, h := range []struct {
		in   func(func() error) error
		name string
	}{{b.In, b.Name}, {b.InPeer, b.Peer}} {
		if rx, tx := channelsOf(t, h.in, h.name); rx != 1 || tx != 1 {
			t.Errorf("%s runs %d receive and %d transmit queues, want 1 and 1", h.name, rx, tx)
		}
	}
}

// channelsOf reads the queues an interface runs (ETHTOOL_GCHANNELS).
func channelsOf(t *testing.T, in func(func() error) error, name string) (rx, tx int) {
	t.Helper()
	if err := in(func() error {
		ch, err := host.ReadChannels(name)
		rx, tx = ch.Rx, ch.Tx
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return rx, tx
}

// queuesOf counts the receive queues of the bed's interface through
// netlink in its namespace.
func queuesOf(t *testing.T, b *Bed) int {
	t.Helper()
	var n int
	if err := b.In(func() error {
		l, err := netlink.LinkByName(b.Name)
		if err == nil {
			n = l.Attrs().NumRxQueues
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGROOnlyOnOwnPair(t *testing.T) {
	b, err := Setup("lo", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.GRO(true); err == nil {
		t.Fatal("GRO changed on an interface the program did not make")
	}
	if _, err := Setup("", io.Discard, WithQueues(100)); err == nil {
		t.Fatal("100 queues accepted")
	}
}

// TestMTU: WithMTU gives both ends the MTU asked for, and a bad one is
// refused before anything is made.
func TestMTU(t *testing.T) {
	testenv.NeedRoot(t)
	b, err := Setup("", io.Discard, WithMTU(9000))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, h := range []struct {
		in   func(func() error) error
		name string
	}{{b.In, b.Name}, {b.InPeer, b.Peer}} {
		var mtu int
		if err := h.in(func() error {
			l, err := netlink.LinkByName(h.name)
			if err == nil {
				mtu = l.Attrs().MTU
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if mtu != 9000 {
			t.Errorf("%s has MTU %d, want 9000", h.name, mtu)
		}
	}
	for _, bad := range []int{-1, 67, 65536} {
		if b, err := Setup("", io.Discard, WithMTU(bad)); err == nil {
			b.Close()
			t.Errorf("WithMTU(%d) accepted", bad)
		}
	}
}
