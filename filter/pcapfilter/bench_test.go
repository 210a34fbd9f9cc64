package pcapfilter

import (
	"strings"
	"testing"
)

func BenchmarkCompile(b *testing.B) {
	for _, expr := range []string{
		"tcp port 22",
		"tcp port 22 and not src host 192.0.2.1",
		"vlan 100 and (udp port 53 or tcp portrange 8000-8100) and not net 10.0.0.0/8",
		strings.Repeat("port 1 or ", 40) + "port 2",
	} {
		b.Run(strings.Fields(expr)[0]+"_"+strings.Fields(expr)[1], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(expr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
