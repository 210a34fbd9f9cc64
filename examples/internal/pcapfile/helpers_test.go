package pcapfile

import (
	"time"

	"github.com/google/gopacket"
)

func captureInfo(ts time.Time, n int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: ts, CaptureLength: n, Length: n}
}
