package testbed

import (
	"errors"
	"fmt"
	"sync"

	"github.com/packetio/packetio/internal/host"
)

// ethtoolGRO reads (set false) or writes (set true) the GRO flag of ifname
// through internal/host, the one door to SIOCETHTOOL.
func ethtoolGRO(ifname string, set, on bool) (bool, error) {
	if set {
		return on, host.SetGRO(ifname, on)
	}
	return host.GRO(ifname)
}

// GRO turns generic receive offload on or off on the example's own
// interface (only on a pair the program made) and returns the function
// that puts it back as it was. A veth passes on the XDP frames its peer
// transmits (the live-frames source, XDP_TX, XDP_REDIRECT) only while its
// NAPI is on, which takes a native XDP program on it or GRO: a receiver
// that attaches no program of its own needs GRO on to be fed that way.
func (b *Bed) GRO(on bool) (restore func() error, err error) {
	return b.gro(b.In, b.Name, on)
}

// PeerGRO is GRO on the far end of the pair.
func (b *Bed) PeerGRO(on bool) (restore func() error, err error) {
	return b.gro(b.InPeer, b.Peer, on)
}

func (b *Bed) gro(in func(func() error) error, name string, on bool) (func() error, error) {
	if !b.Own() {
		return nil, errors.New("testbed: GRO is changed only on a veth pair this program made")
	}
	var was bool
	err := in(func() error {
		var err error
		if was, err = ethtoolGRO(name, false, false); err != nil {
			return err
		}
		if was != on {
			_, err = ethtoolGRO(name, true, on)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testbed: GRO on %s: %w", name, err)
	}
	if was == on {
		return func() error { return nil }, nil
	}
	var once sync.Once
	var rerr error
	restore := func() error {
		once.Do(func() {
			if err := in(func() error { _, err := ethtoolGRO(name, true, was); return err }); err != nil {
				rerr = fmt.Errorf("testbed: restore GRO on %s: %w", name, err)
			}
		})
		return rerr
	}
	// Close puts it back too, before the pair goes, if the caller did not.
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.Join(errors.New("testbed: closed"), restore())
	}
	b.undo = append(b.undo, restore)
	b.mu.Unlock()
	return restore, nil
}

// GROOn reads whether GRO is on on the example's interface.
func (b *Bed) GROOn() (bool, error) { return b.groOn(b.In, b.Name) }

// PeerGROOn reads whether GRO is on on the far end.
func (b *Bed) PeerGROOn() (bool, error) { return b.groOn(b.InPeer, b.Peer) }

func (b *Bed) groOn(in func(func() error) error, name string) (bool, error) {
	var on bool
	err := in(func() error {
		var err error
		on, err = ethtoolGRO(name, false, false)
		return err
	})
	return on, err
}

// setQueues makes ifname run n receive and n transmit queues (a veth's
// channels), in the calling thread's namespace, unless it already does.
func setQueues(ifname string, n int) error { return host.SetChannels(ifname, n, n) }
