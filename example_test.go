package packetio_test

import (
	"fmt"

	"github.com/packetio/packetio"
)

// A filter for UDP ports 9000 and 9001 on VLAN 2043: kinds are ANDed,
// repeats of one kind are alternatives.
func ExampleSteeringFilter() {
	f := packetio.SteeringFilter{Match: append(
		[]packetio.Match{packetio.MatchVLAN(2043)},
		append(packetio.MatchDstPort(packetio.IPProtoUDP, 9000),
			packetio.MatchDstPort(packetio.IPProtoUDP, 9001)...)...)}
	rules, err := f.Rules()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f)
	fmt.Println(len(rules), "rules")
	// Output:
	// vlan 2043 and proto udp and (udp port 9000 or udp port 9001)
	// 2 rules
}

// Refuse, never widen: a port without a protocol is refused rather than
// matched on every protocol.
func ExampleSteeringFilter_Validate() {
	f := packetio.SteeringFilter{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 53}}}
	fmt.Println(f.Validate())
	// Output:
	// steering: "ip/0 port 53" names no protocol (use MatchDstPort or MatchSrcPort): packetio: unsupported
}
