package pcapfilter

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/bpfmatch"
	"github.com/packetio/packetio/filter/bpfmatch/bpfmatchtest"
)

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		expr        string
		col         int
		msg         string
		unsupported bool
	}{
		{"ip and port", 12, `expected a number after "port"`, false},
		{"tcp port 22 and port", 21, `expected a number after "port"`, false},
		{"host", 5, `expected an address after "host"`, false},
		{"net", 4, `expected a network after "net"`, false},
		{"ip proto", 9, `expected a protocol number or name after "proto"`, false},
		{"port 70000", 6, "illegal port number 70000 > 65535", false},
		{"portrange 1000-70000", 11, "illegal port number 70000 > 65535", false},
		{"vlan 4096", 6, "VLAN tag 4096 greater than maximum 4095", false},
		{"ip[1:3] = 1", 6, "data size must be 1, 2, or 4", false},
		{"ip[0] / 0 = 1", 7, "division by zero", false},
		{"ip[0] % 0 = 1", 7, "modulus by zero", false},
		{"ip[0] << 32 = 1", 7, "shift by more than 31 bits", false},
		{"ip[0] / (ip[1] & 0) = 1", 0, "division by zero", false},
		{"ip[0] = ether[ether[0]] * 0 << 0 + -1", 0, "shift by more than 31 bits", false},
		// A refused computation in the first test is an error even when
		// the tests after it make its outcome irrelevant (libpcap folds
		// the first test's constants before it can skip it).
		{"ether[0:2] == -0 % 2 << 31 or not ip[0:2] == ip6[0:2]", 0, "modulus by zero", false},
		{"ether[0:2] == 0 % (2 << 31) and 1 = 0", 0, "modulus by zero", false},
		{"net 10.0.0.1/8", 5, `non-network bits set in "10.0.0.1/8"`, false},
		{"net 10.0.0.0/33", 5, "mask length must be <= 32", false},
		{"net 10.1.2.3 mask 255.0.0.0", 5, `non-network bits set in "10.1.2.3 mask 255.0.0.0"`, false},
		{"host 10.0.0.0/8", 6, "Mask syntax for networks only", false},
		{"net ::1/64", 5, `non-network bits set in "::1/64"`, false},
		{"net ::/129", 8, "mask length must be <= 128", false},
		{"ip host ::1", 9, "'ip' modifier applied to ip6 host", false},
		{"ip6 host 10.0.0.1", 10, "'ip6' modifier applied to ip host", false},
		{"tcp host 10.0.0.1", 10, "'tcp' modifier applied to host", false},
		{"ip6 port 80", 10, "illegal qualifier of 'port'", false},
		{"src proto 6", 5, `expected an address, found "proto"`, false},
		{"tcp proto 6", 11, "'tcp proto' is bogus", false},
		{"arp proto 6", 11, "arp does not encapsulate another protocol", false},
		{"port 53 and 10.0.0.1", 13, "'port' modifier applied to ip host", false},
		{"ether host 10.0.0.1", 12, "illegal link layer address", false},
		{"host 02:00:00:00:00:01", 6, "ethernet address used in non-ether expression", false},
		{"ip broadcast", 4, "netmask not known, so 'ip broadcast' not supported", false},
		{"tcp or 80", 8, `"80" needs a qualifier here`, false},
		{"ip and", 7, `expected a primitive after "and"`, false},
		{"not", 4, `expected a primitive after "not"`, false},
		{"TCP port 22", 1, `expected a primitive (host, net, port, ip, tcp, ...), found "TCP"`, false},
		{"ip proto tcp", 10, `expected a protocol number or name, found "tcp"`, false},
		{"ip[0] = 5-3", 9, `expected a number, len or proto[offset]`, false},
		{"(", 2, "expected a primitive", false},
		{"tcp)", 4, `unbalanced ")"`, false},
		{"(tcp", 5, `expected ")" to close the "(" at column 1, found the end of the expression`, false},
		{"ip[0", 5, `expected "]", found the end of the expression`, false},
		{"ip[0] =", 8, "expected a number, len or proto[offset] in an arithmetic expression, found the end of the expression", false},
		{"ip[0] 1", 7, "expected a comparison (=, !=, <, <=, >, >=), found \"1\"", false},
		{"port 08", 6, "number 08 contains non-octal digit", false},
		{"port 4294967296", 6, "number 4294967296 overflows 32 bits", false},
		{"less", 5, `expected a number after "less"`, false},
		{"ip proto \\foo", 10, "unknown ip proto 'foo'", false},
		{"ip #", 4, "unexpected character '#'", false},
		{"host example.com", 6, "unknown host 'example.com' (host names are not resolved: use the address)", true},
		{"port http", 6, "unknown port 'http'", true},
		{"portrange ftp-ssh", 11, "unknown port in range 'ftp-ssh'", true},
		{"ether host router", 12, "unknown ether host 'router'", true},
		{"gateway router", 1, `"gateway" is not supported`, true},
		{"ip6 protochain 6", 5, `"protochain" is not supported`, true},
		{"pppoes", 1, `"pppoes" is not supported`, true},
		{"mpls 100", 1, `"mpls" is not supported`, true},
		{"wlan host 02:00:00:00:00:01", 1, `"wlan" is not supported`, true},
		{"ether proto 0x809b", 13, "AppleTalk", true},
	} {
		_, err := Compile(tc.expr)
		if err == nil {
			t.Errorf("%q: compiled", tc.expr)
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: %v is not an *Error", tc.expr, err)
			continue
		}
		if e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) || e.Expr != tc.expr {
			t.Errorf("%q: %v (column %d); want column %d and %q", tc.expr, err, e.Column, tc.col, tc.msg)
		}
		if errors.Is(err, packetio.ErrUnsupported) != tc.unsupported {
			t.Errorf("%q: errors.Is(ErrUnsupported) = %v", tc.expr, !tc.unsupported)
		}
		if m := Match(tc.expr); m.Err() == nil || !strings.Contains(m.Err().Error(), tc.msg) {
			t.Errorf("%q: Match carries %v", tc.expr, m.Err())
		}
		if _, err := CompileMatch(tc.expr); err == nil {
			t.Errorf("%q: CompileMatch compiled", tc.expr)
		}
	}
	_, err := Compile("ip and port")
	if got, want := err.Error(), `pcapfilter: column 12: expected a number after "port"`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	_, err = Compile("(5) = 6 and tcp")
	if got, want := err.Error(), "pcapfilter: expression rejects all packets"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

func TestMatchNames(t *testing.T) {
	if got := Match("tcp port 22").String(); got != "tcp port 22" {
		t.Errorf("name %q", got)
	}
	if m := Match("tcp port 22"); m.Err() != nil {
		t.Errorf("error %v", m.Err())
	}
	for _, empty := range []string{"", "  ", "\t\n"} {
		m := Match(empty)
		if got := m.String(); got != "pcap (empty expression)" {
			t.Errorf("empty %q: name %q", empty, got)
		}
		if err := m.Err(); !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), "MatchAll") {
			t.Errorf("empty %q: error %v, want ErrInvalid pointing at filter.MatchAll", empty, err)
		}
	}
	if insns, err := Compile(""); err != nil || len(insns) == 0 {
		t.Errorf("Compile(\"\") keeps libpcap's meaning (every packet): %v, %v", insns, err)
	}
	if _, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{Match("port")}}); err == nil || !strings.Contains(err.Error(), `pcapfilter: column 5: expected a number after "port"`) {
		t.Errorf("NewClassifier with a bad expression: %v", err)
	}
}

// compile compiles expr and runs it in the reference VM.
func compile(t *testing.T, expr string) *bpfmatchtest.Oracle {
	t.Helper()
	insns, err := Compile(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	if _, err := bpfmatch.Compile(expr, insns); err != nil {
		t.Fatalf("%q: bpfmatch refuses our program: %v%s", expr, err, listing(insns))
	}
	o, err := bpfmatchtest.NewOracle(insns)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	return o
}

// decoded is a frame as a person reads it.
type decoded struct {
	tags           []uint16 // VLAN IDs, outermost first
	tpids          []uint16
	et             layers.EthernetType // after the tags
	src, dst       net.IP
	proto          layers.IPProtocol // transport (directly after the IP header)
	fragNext       layers.IPProtocol // after an IPv6 fragment header
	sport, dport   uint16
	laterFragment  bool
	tcpFlags       uint8
	icmpType       uint8
	dstMAC, srcMAC net.HardwareAddr
	arpSPA, arpTPA net.IP
	length         int
}

func decode(frame []byte) decoded {
	var d decoded
	d.length = len(frame)
	var eth layers.Ethernet
	if eth.DecodeFromBytes(frame, gopacket.NilDecodeFeedback) != nil {
		return d
	}
	d.srcMAC, d.dstMAC = eth.SrcMAC, eth.DstMAC
	d.et = eth.EthernetType
	payload := eth.Payload
	for d.et == 0x8100 || d.et == 0x88a8 || d.et == 0x9100 {
		if len(payload) < 4 {
			return d
		}
		d.tpids = append(d.tpids, uint16(d.et))
		d.tags = append(d.tags, uint16(payload[0])<<8&0x0f00|uint16(payload[1]))
		d.et = layers.EthernetType(uint16(payload[2])<<8 | uint16(payload[3]))
		payload = payload[4:]
	}
	var l4 []byte
	switch d.et {
	case layers.EthernetTypeIPv4:
		var ip layers.IPv4
		if ip.DecodeFromBytes(payload, gopacket.NilDecodeFeedback) != nil {
			return d
		}
		d.src, d.dst, d.proto, d.laterFragment, l4 = ip.SrcIP, ip.DstIP, ip.Protocol, ip.FragOffset != 0, ip.Payload
	case layers.EthernetTypeIPv6:
		var ip layers.IPv6
		if ip.DecodeFromBytes(payload, gopacket.NilDecodeFeedback) != nil {
			return d
		}
		d.src, d.dst, d.proto, l4 = ip.SrcIP, ip.DstIP, ip.NextHeader, ip.Payload
	case layers.EthernetTypeARP, 0x8035:
		var arp layers.ARP
		if arp.DecodeFromBytes(payload, gopacket.NilDecodeFeedback) == nil {
			d.arpSPA, d.arpTPA = arp.SourceProtAddress, arp.DstProtAddress
		}
		return d
	default:
		return d
	}
	if d.laterFragment {
		return d
	}
	if d.proto == layers.IPProtocolIPv6Fragment && len(l4) > 0 {
		d.fragNext = layers.IPProtocol(l4[0])
	}
	switch d.proto {
	case layers.IPProtocolTCP, layers.IPProtocolUDP, layers.IPProtocolSCTP:
		if len(l4) >= 4 {
			d.sport, d.dport = uint16(l4[0])<<8|uint16(l4[1]), uint16(l4[2])<<8|uint16(l4[3])
		}
		if d.proto == layers.IPProtocolTCP && len(l4) >= 14 {
			d.tcpFlags = l4[13]
		}
	case layers.IPProtocolICMPv4, layers.IPProtocolICMPv6:
		if len(l4) >= 1 {
			d.icmpType = l4[0]
		}
	}
	return d
}

// wellFormed are the corpus frames a person can reason about: not cut,
// mutated or random, and without bogus header lengths.
func wellFormed() []bpfmatchtest.Frame {
	var out []bpfmatchtest.Frame
	for _, f := range bpfmatchtest.Frames() {
		switch {
		case strings.HasPrefix(f.Name, "runt"), strings.HasPrefix(f.Name, "mutant"), strings.HasPrefix(f.Name, "random"), strings.Contains(f.Name, "bogus"):
			continue
		}
		out = append(out, f)
	}
	return out
}

var (
	ip10001 = net.IPv4(10, 0, 0, 1)
	ip19202 = net.IPv4(192, 0, 2, 1)
)

func in(ip net.IP, cidr string) bool {
	_, n, _ := net.ParseCIDR(cidr)
	return ip != nil && n.Contains(ip)
}

// intents say which frames an expression should match, as a person
// reading it would.
var intents = []struct {
	expr string
	want func(d decoded) bool
}{
	{"tcp port 22", func(d decoded) bool {
		return len(d.tags) == 0 && d.proto == layers.IPProtocolTCP && !d.laterFragment && (d.sport == 22 || d.dport == 22)
	}},
	{"udp dst port 53", func(d decoded) bool {
		return len(d.tags) == 0 && d.proto == layers.IPProtocolUDP && !d.laterFragment && d.dport == 53
	}},
	{"port 53", func(d decoded) bool {
		return len(d.tags) == 0 && (d.proto == layers.IPProtocolUDP || d.proto == layers.IPProtocolTCP || d.proto == layers.IPProtocolSCTP) && !d.laterFragment && (d.sport == 53 || d.dport == 53)
	}},
	{"portrange 1000-2000", func(d decoded) bool {
		in := func(p uint16) bool { return p >= 1000 && p <= 2000 }
		return len(d.tags) == 0 && (d.proto == layers.IPProtocolUDP || d.proto == layers.IPProtocolTCP || d.proto == layers.IPProtocolSCTP) && !d.laterFragment && (in(d.sport) || in(d.dport))
	}},
	{"host 10.0.0.1", func(d decoded) bool {
		return len(d.tags) == 0 && (d.src.Equal(ip10001) || d.dst.Equal(ip10001) || d.arpSPA.Equal(ip10001) || d.arpTPA.Equal(ip10001))
	}},
	{"src net 192.168.0.0/16 or dst net 192.0.2.0/24", func(d decoded) bool {
		return len(d.tags) == 0 && (in(d.src, "192.168.0.0/16") || in(d.dst, "192.0.2.0/24") || in(d.arpSPA, "192.168.0.0/16") || in(d.arpTPA, "192.0.2.0/24"))
	}},
	{"ip6 net 2001:db8::/32", func(d decoded) bool {
		return len(d.tags) == 0 && d.et == layers.EthernetTypeIPv6 && (in(d.src, "2001:db8::/32") || in(d.dst, "2001:db8::/32"))
	}},
	{"tcp port 22 and not src host 192.0.2.1", func(d decoded) bool {
		return len(d.tags) == 0 && d.proto == layers.IPProtocolTCP && !d.laterFragment && (d.sport == 22 || d.dport == 22) && !d.src.Equal(ip19202)
	}},
	{"vlan 100 and udp port 53", func(d decoded) bool {
		return len(d.tags) >= 1 && d.tags[0] == 100 && len(d.tags) == 1 && d.proto == layers.IPProtocolUDP && (d.sport == 53 || d.dport == 53)
	}},
	{"vlan and vlan 10 and ip", func(d decoded) bool {
		return len(d.tags) == 2 && d.tags[1] == 10 && d.et == layers.EthernetTypeIPv4
	}},
	{"tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn", func(d decoded) bool {
		return len(d.tags) == 0 && d.et == layers.EthernetTypeIPv4 && d.proto == layers.IPProtocolTCP && !d.laterFragment && d.tcpFlags&0x12 == 0x02
	}},
	{"icmp[icmptype] = icmp-echo or icmp6[icmp6type] = icmp6-echo", func(d decoded) bool {
		return len(d.tags) == 0 && (d.proto == layers.IPProtocolICMPv4 && d.et == layers.EthernetTypeIPv4 || d.proto == layers.IPProtocolICMPv6) && (d.icmpType == 8 || d.icmpType == 128)
	}},
	{"udp dst port 4789 and udp[8] & 0x08 != 0 and udp[11:4] & 0x00ffffff = 4242", func(d decoded) bool {
		return false // only the VNI 4242 frame; checked by name below
	}},
	{"ether broadcast", func(d decoded) bool { return d.dstMAC.String() == "ff:ff:ff:ff:ff:ff" }},
	{"ether multicast and not ether broadcast", func(d decoded) bool {
		return len(d.dstMAC) == 6 && d.dstMAC[0]&1 == 1 && d.dstMAC.String() != "ff:ff:ff:ff:ff:ff"
	}},
	{"ether src 02:00:00:00:00:02", func(d decoded) bool { return d.srcMAC.String() == "02:00:00:00:00:02" }},
	{"arp or rarp", func(d decoded) bool { return len(d.tags) == 0 && (d.et == layers.EthernetTypeARP || d.et == 0x8035) }},
	{"greater 80 and less 100", func(d decoded) bool { return d.length >= 80 && d.length <= 100 }},
	{"ip6 and not tcp and not udp", func(d decoded) bool {
		// libpcap's tcp and udp look past one IPv6 fragment header.
		tcpOrUDP := func(p layers.IPProtocol) bool { return p == layers.IPProtocolTCP || p == layers.IPProtocolUDP }
		return len(d.tags) == 0 && d.et == layers.EthernetTypeIPv6 && !tcpOrUDP(d.proto) && !tcpOrUDP(d.fragNext)
	}},
}

// TestIntent checks that expressions match what a person means by them,
// which no comparison with libpcap can show (a filter wrong the same way
// in both would agree).
func TestIntent(t *testing.T) {
	frames := wellFormed()
	for _, tc := range intents {
		o := compile(t, tc.expr)
		hits := 0
		for _, f := range frames {
			want := tc.want(decode(f.Data))
			if strings.Contains(tc.expr, "4242") {
				want = f.Name == "v4 vxlan vni 4242"
			}
			got, err := o.Match(f.Data)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%q: %s: matched %v, a person would say %v", tc.expr, f.Name, got, want)
			}
			if got {
				hits++
			}
		}
		if hits == 0 {
			t.Errorf("%q matches no frame: the corpus tests nothing", tc.expr)
		}
	}
}

// TestQualifierCarriesOver checks libpcap's shorthand: a bare id takes the
// qualifiers of the term before it.
func TestQualifierCarriesOver(t *testing.T) {
	frames := bpfmatchtest.Frames()
	for _, pair := range [][2]string{
		{"host 10.0.0.1 or 192.0.2.1", "host 10.0.0.1 or host 192.0.2.1"},
		{"port 53 or 80", "port 53 or port 80"},
		{"tcp dst port 22 or 80 or 443", "tcp dst port 22 or tcp dst port 80 or tcp dst port 443"},
		{"src host 10.0.0.1 and not 10.0.0.2", "src host 10.0.0.1 and not src host 10.0.0.2"},
		{"host 10.0.0.1 and (192.0.2.1 or 10.0.0.2)", "host 10.0.0.1 and (host 192.0.2.1 or host 10.0.0.2)"},
		{"net 10 or 192.168", "net 10.0.0.0/8 or net 192.168.0.0/16"},
		{"tcp && port 22 || 53", "(tcp and port 22) or port 53"},
		{"tcp or udp and port 53", "(tcp or udp) and port 53"},
		{"not tcp and udp", "(not tcp) and udp"},
		{"ip[0] & 1 ^ 3 = 0", "ip[0] & (1 ^ 3) = 0"},
		{"ip[0] - 7 % 3 * 2 = 0x44", "ip[0] - (7 % (3 * 2)) = 0x44"},
		{"ip[2:2] - ip[0] & 0xf << 2 > 20", "(ip[2:2] - ip[0]) & (0xf << 2) > 20"},
	} {
		a, b := compile(t, pair[0]), compile(t, pair[1])
		for _, f := range frames {
			x, _ := a.Match(f.Data)
			y, _ := b.Match(f.Data)
			if x != y {
				t.Errorf("%q and %q differ on %s", pair[0], pair[1], f.Name)
				break
			}
		}
	}
}

// TestClassifier is the kernel-level test: one expression, loaded through
// bpfmatch into the XDP filter, takes exactly the frames it should.
func TestClassifier(t *testing.T) {
	// vlan moves the offsets of everything after it, as in libpcap, so
	// it comes last, in parentheses.
	const expr = "tcp port 22 and not src host 192.0.2.1 or ether broadcast or (vlan 100 and udp port 53)"
	m, err := CompileMatch(expr)
	if err != nil {
		t.Fatal(err)
	}
	c := bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{m}})
	o := compile(t, expr)
	hits := 0
	for _, f := range bpfmatchtest.Frames() {
		got, err := c.Match(f.Data)
		if err != nil {
			t.Fatal(err)
		}
		vm, _ := o.Match(f.Data)
		if got != vm {
			t.Errorf("%s: the kernel says %v, the reference VM %v", f.Name, got, vm)
		}
		if got {
			hits++
		}
	}
	want := func(d decoded) bool {
		ssh := len(d.tags) == 0 && d.proto == layers.IPProtocolTCP && !d.laterFragment && (d.sport == 22 || d.dport == 22) && !d.src.Equal(ip19202)
		dns := len(d.tags) == 1 && d.tags[0] == 100 && d.proto == layers.IPProtocolUDP && (d.sport == 53 || d.dport == 53)
		return ssh || dns || d.dstMAC.String() == "ff:ff:ff:ff:ff:ff"
	}
	for _, f := range wellFormed() {
		if got, _ := c.Match(f.Data); got != want(decode(f.Data)) {
			t.Errorf("%s: delivered %v, want %v", f.Name, got, !got)
		}
	}
	if hits < 5 {
		t.Errorf("only %d frames delivered", hits)
	}
	t.Logf("%d of %d frames delivered", hits, len(bpfmatchtest.Frames()))
}

// TestVLANMovesOffsets pins libpcap's rule: "vlan" moves the offsets of
// every primitive after it, whatever the and/or structure, so "vlan or tcp
// port 22" tests the port behind a tag, and "tcp port 22 or vlan" does not.
func TestVLANMovesOffsets(t *testing.T) {
	after, before := compile(t, "vlan 100 or tcp port 22"), compile(t, "tcp port 22 or vlan 100")
	for _, f := range wellFormed() {
		d := decode(f.Data)
		a, _ := after.Match(f.Data)
		b, _ := before.Match(f.Data)
		tagged100 := len(d.tpids) > 0 && d.tags[0] == 100
		ssh := d.proto == layers.IPProtocolTCP && (d.sport == 22 || d.dport == 22)
		if want := tagged100 || len(d.tags) == 1 && ssh; a != want {
			t.Errorf("vlan 100 or tcp port 22: %s: %v", f.Name, a)
		}
		if want := tagged100 || len(d.tags) == 0 && ssh; b != want {
			t.Errorf("tcp port 22 or vlan 100: %s: %v", f.Name, b)
		}
	}
}

// TestPrograms checks properties of the programs for the expressions
// people use: valid for the reference VM and for bpfmatch, compact, and
// free of ancillary loads.
func TestPrograms(t *testing.T) {
	for _, tc := range []struct {
		expr string
		max  int
	}{
		{"", 1}, {"tcp", 12}, {"tcp port 22", 30}, {"port 53", 60}, {"host 10.0.0.1", 30},
		{"net 2001:db8::/32", 12}, {"vlan 100 and tcp port 22", 40},
		{"tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn", 12},
	} {
		insns, err := Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if len(insns) > tc.max {
			t.Errorf("%q: %d instructions, expected at most %d%s", tc.expr, len(insns), tc.max, listing(insns))
		}
		for _, ins := range insns {
			if ext, ok := ins.(bpf.LoadExtension); ok && ext.Num != bpf.ExtLen {
				t.Errorf("%q: ancillary load %v", tc.expr, ins)
			}
		}
		if _, err := bpfmatch.Compile(tc.expr, insns); err != nil {
			t.Errorf("%q: %v", tc.expr, err)
		}
	}
}

// A run of "not" nests nothing: any number is taken, as libpcap takes
// them, and only its parity counts, for a term and for an id that takes
// the qualifiers before it. Parentheses still nest, and are bounded.
func TestNotRuns(t *testing.T) {
	nots := func(n int) string { return strings.Repeat("not ", n) }
	for _, tc := range []struct{ expr, same string }{
		{nots(301) + "tcp", "not tcp"},
		{nots(300) + "tcp", "tcp"},
		{"host 10.0.0.1 or " + nots(201) + "10.0.0.2", "host 10.0.0.1 or not 10.0.0.2"},
		{"host 10.0.0.1 or " + nots(200) + "(10.0.0.2)", "host 10.0.0.1 or 10.0.0.2"},
	} {
		got, err := Compile(tc.expr)
		if err != nil {
			t.Errorf("%.40q...: %v", tc.expr, err)
			continue
		}
		want, err := Compile(tc.same)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%.40q... compiles other than %q:%s\nwant:%s", tc.expr, tc.same, listing(got), listing(want))
		}
	}
	deep := strings.Repeat("(", maxDepth+1) + "ip" + strings.Repeat(")", maxDepth+1)
	var e *Error
	if _, err := Compile(deep); !errors.As(err, &e) || !strings.Contains(e.Msg, "nested more than") {
		t.Errorf("%d parentheses: %v, want the nesting refused", maxDepth+1, err)
	}
}

// A transport-header load at a "negative" constant index adds the IPv4
// header length at run time, in 32 bits, as libpcap does: tcp[0 - 20]
// wraps back to the IPv4 header's first byte when it has no options.
// Folded into the load's offset it would read past any packet instead.
func TestNegativeTransportIndex(t *testing.T) {
	insns, err := Compile("tcp[0 - 20:1] = 0x45")
	if err != nil {
		t.Fatal(err)
	}
	added := slices.ContainsFunc(insns, func(in bpf.Instruction) bool { return in == bpf.ALUOpX{Op: bpf.ALUOpAdd} })
	far := slices.ContainsFunc(insns, func(in bpf.Instruction) bool {
		l, ok := in.(bpf.LoadIndirect)
		return ok && l.Off >= 1<<31-1
	})
	if !added || far {
		t.Errorf("the index is not added to the header length at run time:%s", listing(insns))
	}
	o, err := bpfmatchtest.NewOracle(insns)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fr := range bpfmatchtest.Frames() {
		// An unfragmented IPv4 TCP packet without options: version 4,
		// IHL 5, so the byte read is 0x45.
		d := fr.Data
		if len(d) < 14+20+20 || d[12] != 8 || d[13] != 0 || d[14] != 0x45 || d[23] != 6 || d[20]&0x1f != 0 || d[21] != 0 {
			continue
		}
		n++
		if ok, err := o.Match(d); err != nil || !ok {
			t.Errorf("%s: tcp[0 - 20:1] = 0x45 does not match (%v, %v)", fr.Name, ok, err)
		}
	}
	if n == 0 {
		t.Fatal("no IPv4 TCP frame without options among the test frames")
	}
}
