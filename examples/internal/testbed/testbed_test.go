package testbed

import (
	"io"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
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
