package afxdp

import (
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
)

// WithTxTimestamps asks for departure stamps (packetio.TimestampTransmitter).
// AF_XDP gets them only from a driver that writes a transmit timestamp
// into the frame's xsk_tx_metadata at completion (netdev xsk-features
// "tx-timestamp", Linux 6.8+), and this backend does not read that yet, so
// Open refuses the option with an error matching packetio.ErrUnsupported
// that names the interface and says which of the two is missing: the
// driver's feature (veth, and every copy-mode device, lack it) or this
// backend's support. Use afpacket's WithTxTimestamps for software stamps.
func WithTxTimestamps() Option { return func(c *config) { c.txStamps = true } }

// checkTxStamps refuses WithTxTimestamps on ifname, asking the kernel's
// netdev family (in the calling thread's namespace) what the driver offers,
// so the reason names the missing piece. It is called before anything is
// attached.
func checkTxStamps(ifname string) error {
	feat, err := xdp.QueryXSKFeatures(ifname)
	if err != nil {
		return fmt.Errorf("%w: WithTxTimestamps on %s: cannot ask the driver for AF_XDP transmit timestamps (netdev xsk-features): %w", packetio.ErrUnsupported, ifname, err)
	}
	if !feat.TxTimestamp() {
		return fmt.Errorf("%w: WithTxTimestamps on %s: the driver does not report AF_XDP transmit timestamps (netdev xsk-features lacks tx-timestamp; has %v)", packetio.ErrUnsupported, ifname, feat)
	}
	return fmt.Errorf("%w: WithTxTimestamps on %s: the driver reports AF_XDP transmit timestamps, but this backend does not read them from the completion metadata yet", packetio.ErrUnsupported, ifname)
}
