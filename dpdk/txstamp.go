package dpdk

import (
	"fmt"

	"github.com/packetio/packetio"
)

// WithTxTimestamps asks for departure stamps (packetio.TimestampTransmitter).
// DPDK's ethdev API has no per-packet departure stamp: only
// rte_eth_timesync_read_tx_timestamp, the stamp of one IEEE 1588 packet at
// a time on PMDs with a PTP clock, and the PMDs this backend drives here
// (net_af_packet, net_af_xdp) have none. Open refuses the option with an
// error matching packetio.ErrUnsupported that says so, before the EAL
// starts. Use afpacket's WithTxTimestamps for software stamps.
func WithTxTimestamps() Option { return func(c *config) { c.txStamps = true } }

// errTxStamps is the refusal of WithTxTimestamps.
func errTxStamps() error {
	return fmt.Errorf("WithTxTimestamps: the DPDK backend has no per-packet departure stamps (ethdev offers only rte_eth_timesync_read_tx_timestamp for one PTP packet at a time, and net_af_packet and net_af_xdp have no PTP clock): %w", packetio.ErrUnsupported)
}
