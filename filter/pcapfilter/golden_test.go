package pcapfilter

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// golden are expressions whose programs are kept in testdata/golden, so
// that a change in the code generator shows in review. Regenerate with
// go test -run TestGolden ./filter/pcapfilter/ -args -update.
var golden = map[string]string{
	"tcp_port_22":      "tcp port 22",
	"host":             "host 10.0.0.1",
	"vlan_dns":         "vlan 100 and udp port 53",
	"ip6_net":          "ip6 net 2001:db8::/32",
	"syn":              "tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn",
	"icmp_echo":        "icmp[icmptype] = icmp-echo",
	"http_get":         "tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420",
	"ssh_not_from_net": "tcp port 22 and not src net 192.0.2.0/24",
	"portrange":        "udp portrange 1000-2000",
	"ether":            "ether src 02:00:00:00:00:01 or ether broadcast",
}

func TestGolden(t *testing.T) {
	for name, expr := range golden {
		insns, err := Compile(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# %s\n", expr)
		for _, ins := range insns {
			fmt.Fprintf(&b, "%v\n", ins)
		}
		path := filepath.Join("testdata", "golden", name+".txt")
		if *update {
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if string(want) != b.String() {
			t.Errorf("%q: the program changed (run with -update if that is intended):\n--- want\n%s--- got\n%s", expr, want, b.String())
		}
	}
}
