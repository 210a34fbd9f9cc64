//go:build linux

package afpacket

import (
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// BenchmarkTransmitTxStamps is BenchmarkTransmit (64-byte frames, SendFunc
// of 256) with and without WithTxTimestamps; "on" also reads every stamp
// back with TxTimestamps after each batch, so its ns/op is the whole cost
// of a stamped packet. stamps/pkt is how many stamps came back per frame.
// Compare the two in one run, interleaved:
//
//	for i in 1 2 3 4 5; do for m in off on; do
//	  go test -run X -bench 'TransmitTxStamps/'$m'$' -benchtime 2000000x ./afpacket/
//	done; done
func BenchmarkTransmitTxStamps(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			opts := []Option{WithRxQueues(0)}
			if on {
				opts = append(opts, WithTxTimestamps())
			}
			pair := netns.New(b)
			tx := openIn(b, pair.A, opts...).TxQueue(0)
			ts := tx.(packetio.TimestampTransmitter)
			frame := benchFrame()
			build := func(i int, f []byte) int { return copy(f, frame) }
			out := make([]packetio.TxStamp, 0, 1024)
			stamps := 0
			b.ReportAllocs()
			b.ResetTimer()
			sent := 0
			for sent < b.N {
				n, err := tx.SendFunc(min(256, b.N-sent), build)
				if err != nil {
					b.Fatal(err)
				}
				sent += n
				if on {
					for {
						out = ts.TxTimestamps(out[:0])
						stamps += len(out)
						if len(out) < cap(out) {
							break
						}
					}
				}
			}
			b.StopTimer()
			reportPPS(b, sent)
			b.ReportMetric(float64(stamps)/float64(max(sent, 1)), "stamps/pkt")
		})
	}
}
