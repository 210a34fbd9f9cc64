package netdev

import (
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ErrNoFamily is returned (wrapped) by Query when the kernel has no "netdev"
// generic-netlink family, which arrived in Linux 6.3: the features are then
// unknown, and a caller falls back to finding them out by trying.
var ErrNoFamily = errors.New("kernel has no netdev generic-netlink family (Linux 6.3 or later)")

// Query asks the kernel for the features of the interface with index
// ifindex.
//
// The question is asked in the network namespace of the calling OS thread:
// to ask about an interface inside another namespace, call Query from a
// goroutine locked to a thread that has entered it (netns.Host.Do in the
// tests does exactly that). An index that names no interface there is an
// error wrapping unix.ENODEV.
func Query(ifindex int) (Features, error) {
	b, err := queryRaw(ifindex)
	if err != nil {
		return Features{}, err
	}
	f, err := Decode(b)
	if err != nil {
		return Features{}, fmt.Errorf("netdev: ifindex %d: %w", ifindex, err)
	}
	if f.Ifindex != ifindex {
		return Features{}, fmt.Errorf("netdev: ifindex %d: the kernel answered about ifindex %d", ifindex, f.Ifindex)
	}
	return f, nil
}

// queryRaw sends NETDEV_CMD_DEV_GET and returns the attribute bytes of the
// reply.
func queryRaw(ifindex int) ([]byte, error) {
	if ifindex <= 0 || ifindex > 1<<31-1 {
		return nil, fmt.Errorf("netdev: ifindex %d is out of range", ifindex)
	}
	// A nil config opens the socket on the calling thread, so in its
	// network namespace.
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("netdev: open a generic-netlink socket: %w", err)
	}
	defer c.Close()

	fam, err := c.GetFamily(familyName)
	if err != nil {
		return nil, familyError(err)
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrIfindex, uint32(ifindex))
	req, err := ae.Encode()
	if err != nil {
		return nil, fmt.Errorf("netdev: encode request: %w", err)
	}
	msgs, err := c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmdDevGet, Version: familyVersion},
		Data:   req,
	}, fam.ID, netlink.Request)
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("netdev: no interface with ifindex %d in this network namespace: %w", ifindex, err)
		}
		return nil, fmt.Errorf("netdev: dev-get ifindex %d: %w", ifindex, err)
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("netdev: dev-get ifindex %d: %d replies, want 1", ifindex, len(msgs))
	}
	return msgs[0].Data, nil
}

// familyError translates a failed family lookup: "no such family" becomes
// ErrNoFamily.
func familyError(err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netdev: %w: %v", ErrNoFamily, err)
	}
	return fmt.Errorf("netdev: look up the %q generic-netlink family: %w", familyName, err)
}
