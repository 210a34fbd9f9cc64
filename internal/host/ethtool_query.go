package host

import (
	"bytes"
	"fmt"
)

// More of the ethtool UAPI, for the queries and settings below.
const (
	ethtoolGDrvInfo  = 0x03 // ETHTOOL_GDRVINFO, struct ethtool_drvinfo
	ethtoolGGRO      = 0x2b // ETHTOOL_GGRO, struct ethtool_value
	ethtoolSGRO      = 0x2c // ETHTOOL_SGRO, struct ethtool_value
	ethtoolGChannels = 0x3c // ETHTOOL_GCHANNELS, struct ethtool_channels
	ethtoolSChannels = 0x3d // ETHTOOL_SCHANNELS, struct ethtool_channels

	drvInfoLen  = 196 // sizeof(struct ethtool_drvinfo)
	channelsLen = 36  // sizeof(struct ethtool_channels): nine u32
)

// Channels are an interface's queue counts (struct ethtool_channels): the
// receive-only, transmit-only and combined channels it runs.
type Channels struct {
	Rx, Tx, Combined          int
	MaxRx, MaxTx, MaxCombined int
}

// RxQueues is how many receive queues the channels make: combined plus
// receive-only.
func (c Channels) RxQueues() int { return c.Combined + c.Rx }

// ReadChannels asks the driver for ifname's channels (ETHTOOL_GCHANNELS)
// through a socket of the calling thread's network namespace. It changes
// nothing.
func ReadChannels(ifname string) (Channels, error) {
	var c Channels
	err := withEthtool(ifname, "ETHTOOL_GCHANNELS", func(dev ethtoolIO) error {
		b, err := getChannels(dev, ifname)
		if err == nil {
			c = channelsOf(b)
		}
		return err
	})
	return c, err
}

// SetChannels makes ifname run rx receive and tx transmit channels
// (ETHTOOL_SCHANNELS; a veth's queues) unless it already does. It is a
// change to the host that nothing here undoes: only tests and examples
// call it, on interfaces they made.
func SetChannels(ifname string, rx, tx int) error {
	return withEthtool(ifname, "ETHTOOL_SCHANNELS", func(dev ethtoolIO) error {
		b, err := getChannels(dev, ifname)
		if err != nil {
			return err
		}
		if c := channelsOf(b); c.Rx == rx && c.Tx == tx {
			return nil
		}
		ne.PutUint32(b[0:], ethtoolSChannels)
		ne.PutUint32(b[20:], uint32(rx))
		ne.PutUint32(b[24:], uint32(tx))
		return dev.ethtool(ifname, b)
	})
}

func getChannels(dev ethtoolIO, ifname string) ([]byte, error) {
	b := make([]byte, channelsLen)
	ne.PutUint32(b, ethtoolGChannels)
	return b, dev.ethtool(ifname, b)
}

// channelsOf decodes struct ethtool_channels: cmd, max_rx, max_tx,
// max_other, max_combined, rx_count, tx_count, other_count,
// combined_count.
func channelsOf(b []byte) Channels {
	u := func(i int) int { return int(ne.Uint32(b[4*i:])) }
	return Channels{MaxRx: u(1), MaxTx: u(2), MaxCombined: u(4), Rx: u(5), Tx: u(6), Combined: u(8)}
}

// Driver is ifname's driver (ETHTOOL_GDRVINFO), "" when it has none to
// report (or the query fails: a name for Info lines and decisions, never
// an error).
func Driver(ifname string) string {
	var name string
	_ = withEthtool(ifname, "ETHTOOL_GDRVINFO", func(dev ethtoolIO) error {
		b := make([]byte, drvInfoLen)
		ne.PutUint32(b, ethtoolGDrvInfo)
		if err := dev.ethtool(ifname, b); err != nil {
			return err
		}
		drv := b[4:36]
		if i := bytes.IndexByte(drv, 0); i >= 0 {
			drv = drv[:i]
		}
		name = string(drv)
		return nil
	})
	return name
}

// GRO reports whether generic receive offload is on on ifname
// (ETHTOOL_GGRO).
func GRO(ifname string) (bool, error) {
	var on bool
	err := withEthtool(ifname, "ETHTOOL_GGRO", func(dev ethtoolIO) error {
		var err error
		on, err = ethtoolValue(dev, ifname, ethtoolGGRO, 0)
		return err
	})
	return on, err
}

// SetGRO turns generic receive offload on or off on ifname
// (ETHTOOL_SGRO). The caller owns the undo: testbed, on the veth pairs it
// makes, puts the old value back.
func SetGRO(ifname string, on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	return withEthtool(ifname, "ETHTOOL_SGRO", func(dev ethtoolIO) error {
		_, err := ethtoolValue(dev, ifname, ethtoolSGRO, v)
		return err
	})
}

// ethtoolValue runs a command on struct ethtool_value and returns whether
// the data it comes back with is non-zero.
func ethtoolValue(dev ethtoolIO, ifname string, cmd, data uint32) (bool, error) {
	b := make([]byte, 8)
	ne.PutUint32(b, cmd)
	ne.PutUint32(b[4:], data)
	if err := dev.ethtool(ifname, b); err != nil {
		return false, err
	}
	return ne.Uint32(b[4:]) != 0, nil
}

// withEthtool runs fn on an ethtool socket of the calling thread's network
// namespace, naming the command and the interface in its error.
func withEthtool(ifname, what string, fn func(ethtoolIO) error) error {
	if !safeName(ifname) {
		return fmt.Errorf("%s: bad interface name %q", what, ifname)
	}
	dev, err := openEthtool()
	if err != nil {
		return fmt.Errorf("%s on %s: %w", what, ifname, err)
	}
	defer dev.close()
	if err := fn(dev); err != nil {
		return fmt.Errorf("%s on %s: %w", what, ifname, err)
	}
	return nil
}
