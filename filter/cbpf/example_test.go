package cbpf_test

import (
	"fmt"

	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter/cbpf"
)

// Compile a filter for UDP datagrams to port 53 and run it on a frame in
// the Go VM (a packet socket runs it in the kernel: afpacket.WithSteering).
func ExampleCompile() {
	prog, err := cbpf.Compile(packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, 53)})
	if err != nil {
		fmt.Println(err)
		return
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		fmt.Println(err)
		return
	}
	frame := make([]byte, 64)
	frame[12], frame[13] = 0x08, 0x00 // IPv4
	frame[14] = 0x45                  // no options
	frame[23] = 17                    // UDP
	for _, port := range []byte{53, 54} {
		frame[37] = port // destination port, low byte
		n, _ := vm.Run(frame)
		fmt.Printf("port %d: taken %v\n", port, n > 0)
	}
	// Output:
	// port 53: taken true
	// port 54: taken false
}
