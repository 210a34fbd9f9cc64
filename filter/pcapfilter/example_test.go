package pcapfilter_test

import (
	"fmt"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter/pcapfilter"
)

func ExampleCompile() {
	insns, err := pcapfilter.Compile("tcp dst port 22")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ins := range insns {
		fmt.Println(ins)
	}
	// Output:
	// ldh [12]
	// jneq #34525,4
	// ldb [20]
	// jneq #6,11
	// ldh [56]
	// jeq #22,8,9
	// jneq #2048,8
	// ldb [23]
	// jneq #6,6
	// ldh [20]
	// jset #8191,4
	// ldx 4*([14]&0xf)
	// ldh [x + 16]
	// jneq #22,1
	// ret #65535
	// ret #0
}

func ExampleMatch() {
	m := pcapfilter.Match("tcp port 443 and not src net 192.0.2.0/24")
	fmt.Println(m, m.Err())
	_ = xdp.WithFilter(m) // for xdp.Open or filter.NewClassifier

	// A mistake is reported with its column, by Open or here.
	fmt.Println(pcapfilter.Match("udp port").Err())
	_, err := pcapfilter.CompileMatch("tcp port ssh")
	fmt.Println(err)
	// Output:
	// tcp port 443 and not src net 192.0.2.0/24 <nil>
	// match udp port: pcapfilter: column 9: expected a number after "port"
	// pcapfilter: column 10: unknown port 'ssh' (service names are not supported: use the number)
}
