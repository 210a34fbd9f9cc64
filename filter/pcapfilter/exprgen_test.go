package pcapfilter

import "strings"

// exprGen makes tcpdump expressions from a small grammar, choosing by the
// bytes it is given (zeros when they run out), for the fuzz targets. The
// values come from the frame corpus, so that primitives match some frames.
type exprGen struct {
	data  []byte
	pos   int
	depth int
}

func (g *exprGen) byte() byte {
	if g.pos < len(g.data) {
		b := g.data[g.pos]
		g.pos++
		return b
	}
	return 0
}

func (g *exprGen) pick(options ...string) string { return options[int(g.byte())%len(options)] }

func (g *exprGen) expr() string {
	g.depth++
	defer func() { g.depth-- }()
	s := g.term()
	for n := 0; n < 3 && g.depth < 4 && g.byte()%3 != 0; n++ {
		op := g.pick("and", "or", "&&", "||")
		if g.byte()%4 == 0 {
			s += " " + op + " " + g.bareID()
		} else {
			s += " " + op + " " + g.term()
		}
	}
	return s
}

func (g *exprGen) term() string {
	if g.pos >= len(g.data) {
		return g.prim()
	}
	switch g.byte() % 10 {
	case 0:
		return g.pick("not ", "! ") + g.term()
	case 1:
		if g.depth < 4 {
			return "(" + g.expr() + ")"
		}
	}
	return g.prim()
}

// bareID is an id that takes the qualifiers of the term before it.
func (g *exprGen) bareID() string {
	switch g.byte() % 4 {
	case 0:
		return g.ipv4()
	case 1:
		return g.port()
	case 2:
		return "not " + g.ipv4()
	}
	return g.ipv6()
}

func (g *exprGen) ipv4() string {
	return g.pick("10.0.0.1", "10.0.0.2", "192.0.2.1", "192.168.1.10", "198.51.100.7", "224.0.0.251", "10.0.0", "10")
}

func (g *exprGen) ipv6() string {
	return g.pick("2001:db8::1", "2001:db8:1::2", "fe80::1", "ff02::1", "::1")
}

func (g *exprGen) net4() string {
	return g.pick("10.0.0.0/8", "10.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "0.0.0.0/0", "10.0.0.0 mask 255.255.0.0", "10", "192.168")
}

func (g *exprGen) net6() string {
	return g.pick("2001:db8::/32", "fe80::/10", "ff00::/8", "2001:db8:1::/48", "::/0")
}

func (g *exprGen) port() string {
	return g.pick("22", "53", "80", "443", "1000", "1500", "2000", "4789", "0", "65535", "0x35", "010")
}

func (g *exprGen) mac() string {
	return g.pick("02:00:00:00:00:01", "02:00:00:00:00:02", "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:fb", "33-33-00-00-00-01", "0200.0000.0001")
}

func (g *exprGen) dir() string {
	return g.pick("", "", "src ", "dst ", "src or dst ", "src and dst ", "dst or src ")
}

func (g *exprGen) prim() string {
	switch g.byte() % 22 {
	case 0:
		return g.pick("", "ip ", "arp ", "rarp ") + g.dir() + "host " + g.ipv4()
	case 1:
		return g.pick("", "ip ", "arp ") + g.dir() + "net " + g.net4()
	case 2:
		return g.pick("", "ip6 ") + g.dir() + g.pick("host "+g.ipv6(), "net "+g.net6())
	case 3:
		return g.pick("", "tcp ", "udp ", "sctp ") + g.dir() + "port " + g.port()
	case 4:
		return g.pick("", "tcp ", "udp ") + g.dir() + "portrange " + g.port() + "-" + g.port()
	case 5:
		return "ether " + g.pick("host ", "src ", "dst ", "src and dst ") + g.mac()
	case 6:
		return g.pick("ip", "ip6", "arp", "rarp", "tcp", "udp", "icmp", "icmp6", "sctp", "igmp")
	case 7:
		return g.pick("ether broadcast", "ether multicast", "broadcast", "multicast", "ip multicast", "ip6 multicast")
	case 8:
		return g.pick("proto ", "ip proto ", "ip6 proto ") + g.pick("1", "6", "17", "58", "44", "132", "47", "\\tcp", "\\udp")
	case 9:
		return "ether proto " + g.pick("0x800", "0x86dd", "0x806", "0x8100", "0x88cc", "\\ip", "\\arp", "0x42", "6")
	case 10:
		return "vlan" + g.pick("", " 100", " 10", " 5", " 4095", " 0", " 200")
	case 11:
		return g.pick("less ", "greater ") + g.pick("14", "60", "61", "70", "100", "1500")
	case 12, 13, 14, 15, 16:
		// A side that reads the packet: libpcap's optimiser is not
		// consistent about which tests a comparison of two constants
		// leaves behind, and such a test means nothing anyway.
		l := g.arith(0)
		if !strings.Contains(l, "[") && !strings.Contains(l, "len") {
			l = g.pick("ip[0]", "tcp[13]", "len", "ether[12:2]") + " + " + l
		}
		return l + " " + g.pick("=", "!=", "<", "<=", ">", ">=", "==") + " " + g.arith(0)
	case 17:
		return g.pick("src ", "dst ", "") + g.pick("host ", "") + g.ipv4()
	case 18:
		return "tcp[tcpflags] & " + g.pick("tcp-syn", "tcp-ack", "(tcp-syn|tcp-ack)", "tcp-fin", "tcp-rst", "tcp-push") + g.pick(" != 0", " = 0", " = tcp-syn")
	case 19:
		return "icmp[icmptype] " + g.pick("=", "!=") + " " + g.pick("icmp-echo", "icmp-echoreply", "icmp-unreach")
	}
	return g.pick("", "ip ", "ip6 ") + g.dir() + "host " + g.pick(g.ipv4(), g.ipv6())
}

func (g *exprGen) arith(depth int) string {
	if depth > 2 {
		return g.pick("0", "1", "4", "14", "0x45", "64", "255", "len")
	}
	switch g.byte() % 12 {
	case 0, 1, 2, 3:
		size := g.pick("", "", ":1", ":2", ":4")
		idx := g.pick("0", "1", "2", "6", "8", "9", "12", "13", "16", "20", "23", "40")
		if g.byte()%6 == 0 {
			idx = g.arith(depth + 1)
		}
		return g.pick("ether", "ip", "ip6", "tcp", "udp", "icmp", "icmp6", "arp") + "[" + idx + size + "]"
	case 4:
		return g.pick("0", "1", "2", "5", "6", "17", "0x45", "0x800", "64", "255", "0xffff", "0xffffffff", "0x80000000", "4294967295")
	case 5:
		return "len"
	case 6:
		return "(" + g.arith(depth+1) + ")"
	case 7:
		return "-" + g.arith(depth+1)
	}
	op := g.pick("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>")
	r := g.arith(depth + 1)
	if op == "<<" || op == ">>" {
		r = g.pick("0", "1", "2", "4", "8", "31")
	}
	if op == "/" || op == "%" {
		r = g.pick("1", "2", "3", "7", "0x10", "ip[1]", "ip[9]")
	}
	return g.arith(depth+1) + " " + op + " " + r
}

// generate makes one expression from data.
func generateExpr(data []byte) string {
	g := &exprGen{data: data}
	return strings.TrimSpace(g.expr())
}
