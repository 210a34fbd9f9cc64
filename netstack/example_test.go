package netstack_test

import (
	"fmt"
	"io"
	"log"
	"net/netip"

	"github.com/packetio/packetio/netstack"
	"github.com/packetio/packetio/pipe"
)

// Two stacks joined by an in-memory pipe: a server and a client, no root
// needed.
func Example() {
	devA, devB, err := pipe.New()
	if err != nil {
		log.Fatal(err)
	}
	defer devA.Close()
	defer devB.Close()

	server, err := netstack.New(devA, netstack.Config{Addr: netip.MustParsePrefix("192.0.2.1/24")})
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	client, err := netstack.New(devB, netstack.Config{Addr: netip.MustParsePrefix("192.0.2.2/24")})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	l, err := server.Listen("tcp", ":7")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) // echo
	}()

	c, err := client.Dial("tcp", "192.0.2.1:7")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "hello over gVisor")
	buf := make([]byte, 17)
	if _, err := io.ReadFull(c, buf); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(buf))
	// Output: hello over gVisor
}
