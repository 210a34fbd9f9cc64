//go:build linux

package afpacket

import (
	"testing"

	"github.com/packetio/packetio"
)

// BenchmarkReceiveSteering is BenchmarkReceive with WithSteering: a rule of
// two conditions (destination MAC and EtherType) that every fed frame
// matches, so the rate compares with BenchmarkReceive and the difference
// is the classic BPF program the kernel runs per frame.
func BenchmarkReceiveSteering(b *testing.B) {
	benchReceive(b, 1024, WithSteering(packetio.SteeringFilter{Match: []packetio.Match{
		packetio.MatchDstMAC([6]byte(benchDst)), packetio.MatchEtherType(0x88b5),
	}}))
}

// BenchmarkReceiveFilterExpr is the same with the tcpdump expression of
// that rule.
func BenchmarkReceiveFilterExpr(b *testing.B) {
	benchReceive(b, 1024, WithFilterExpr("ether dst 02:00:00:00:00:02 and ether proto 0x88b5"))
}
