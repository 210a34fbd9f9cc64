package pcapfilter

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

type tokKind uint8

const (
	tEOF   tokKind = iota
	tNum           // a number or a named constant (tcp-syn, icmptype, ...)
	tHost4         // a dotted IPv4 address of two to four parts
	tHost6         // an IPv6 address
	tMAC           // an Ethernet address
	tName          // any other word, or a \-escaped one
	tKw            // a keyword
	tLParen
	tRParen
	tLBrack
	tRBrack
	tColon
	tSlash
	tPlus
	tMinus
	tStar
	tPercent
	tAmp
	tPipe
	tCaret
	tShl
	tShr
	tEq
	tNeq
	tLt
	tLe
	tGt
	tGe
	tNot
	tAnd
	tOr
)

type keyword uint8

const (
	kNone keyword = iota
	kHost
	kNet
	kMask
	kPort
	kPortrange
	kProto
	kSrc
	kDst
	kGateway
	kProtochain
	kEther
	kIP
	kIP6
	kARP
	kRARP
	kTCP
	kUDP
	kICMP
	kICMP6
	kSCTP
	kIGMP
	kVLAN
	kLess
	kGreater
	kLen
	kBroadcast
	kMulticast
	kUnsupported // a libpcap keyword this package does not implement
)

var keywords = map[string]keyword{
	"host": kHost, "net": kNet, "mask": kMask, "port": kPort, "portrange": kPortrange,
	"proto": kProto, "src": kSrc, "dst": kDst, "gateway": kGateway, "protochain": kProtochain,
	"ether": kEther, "link": kEther, "ip": kIP, "ip6": kIP6, "arp": kARP, "rarp": kRARP,
	"tcp": kTCP, "udp": kUDP, "icmp": kICMP, "icmp6": kICMP6, "sctp": kSCTP, "igmp": kIGMP,
	"vlan": kVLAN, "less": kLess, "greater": kGreater, "len": kLen, "length": kLen,
	"broadcast": kBroadcast, "multicast": kMulticast,
}

// unsupportedWords are libpcap keywords outside this package's grammar:
// they get an error naming them rather than being taken for host names.
var unsupportedWords = []string{
	"fddi", "tr", "wlan", "ppp", "slip", "radio", "atalk", "aarp", "decnet", "lat", "sca", "moprc", "mopdl",
	"iso", "esis", "es-is", "isis", "is-is", "l1", "l2", "iih", "lsp", "snp", "csnp", "psnp", "clnp", "stp",
	"ipx", "netbeui", "ah", "esp", "pim", "vrrp", "carp", "igrp", "mpls", "pppoed", "pppoes", "geneve",
	"inbound", "outbound", "ifindex", "llc", "type", "subtype", "dir", "addr1", "addr2", "addr3", "addr4",
	"address1", "address2", "address3", "address4", "ra", "ta", "lane", "oamf4", "oamf4ec", "oamf4sc",
	"oam", "metac", "bcc", "sc", "ilmic", "metaconnect", "connectmsg", "vpi", "vci", "action", "reason",
	"rnr", "rulenum", "ruleset", "srnr", "subrulenum", "hdpr", "on", "fisu", "lssu", "lsu", "msu", "sio",
	"opc", "dpc", "sls", "hfisu", "hlssu", "hmsu", "hsio", "hopc", "hdpc", "hsls", "random", "ran",
}

func init() {
	for _, w := range unsupportedWords {
		keywords[w] = kUnsupported
	}
}

// named are the words libpcap's scanner turns into numbers.
var named = map[string]uint32{
	"tcpflags": 13, "tcp-fin": 0x01, "tcp-syn": 0x02, "tcp-rst": 0x04, "tcp-push": 0x08,
	"tcp-ack": 0x10, "tcp-urg": 0x20, "tcp-ece": 0x40, "tcp-cwr": 0x80,
	"icmptype": 0, "icmpcode": 1,
	"icmp-echoreply": 0, "icmp-unreach": 3, "icmp-sourcequench": 4, "icmp-redirect": 5,
	"icmp-echo": 8, "icmp-routeradvert": 9, "icmp-routersolicit": 10, "icmp-timxceed": 11,
	"icmp-paramprob": 12, "icmp-tstamp": 13, "icmp-tstampreply": 14, "icmp-ireq": 15,
	"icmp-ireqreply": 16, "icmp-maskreq": 17, "icmp-maskreply": 18,
	"icmp6type": 0, "icmp6code": 1,
	"icmp6-destinationunreach": 1, "icmp6-packettoobig": 2, "icmp6-timeexceeded": 3,
	"icmp6-parameterproblem": 4, "icmp6-echo": 128, "icmp6-echoreply": 129,
	"icmp6-multicastlistenerquery": 130, "icmp6-multicastlistenerreportv1": 131,
	"icmp6-multicastlistenerdone": 132, "icmp6-routersolicit": 133, "icmp6-routeradvert": 134,
	"icmp6-neighborsolicit": 135, "icmp6-neighboradvert": 136, "icmp6-redirect": 137,
	"icmp6-routerrenum": 138, "icmp6-nodeinformationquery": 139, "icmp6-nodeinformationresponse": 140,
	"icmp6-ineighbordiscoverysolicit": 141, "icmp6-ineighbordiscoveryadvert": 142,
	"icmp6-multicastlistenerreportv2": 143, "icmp6-homeagentdiscoveryrequest": 144,
	"icmp6-homeagentdiscoveryreply": 145, "icmp6-mobileprefixsolicit": 146,
	"icmp6-mobileprefixadvert": 147, "icmp6-certpathsolicit": 148, "icmp6-certpathadvert": 149,
	"icmp6-multicastrouteradvert": 151, "icmp6-multicastroutersolicit": 152,
	"icmp6-multicastrouterterm": 153,
}

type token struct {
	kind tokKind
	kw   keyword
	text string
	num  uint32
	mac  net.HardwareAddr
	ip6  netip.Addr
	pos  int // byte offset in the expression
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
func isAlnum(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
func isWord(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }

// lex splits expr into tokens, ending with tEOF.
func lex(expr string) ([]token, error) {
	var toks []token
	for i := 0; ; {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		if i == len(expr) {
			return append(toks, token{kind: tEOF, pos: i}), nil
		}
		t, n, err := lexOne(expr, i)
		if err != nil {
			return nil, err
		}
		t.pos = i
		toks = append(toks, t)
		i += n
	}
}

func lexOne(s string, i int) (token, int, error) {
	c := s[i]
	two := ""
	if i+1 < len(s) {
		two = s[i : i+2]
	}
	switch two {
	case "&&":
		return token{kind: tAnd, text: two}, 2, nil
	case "||":
		return token{kind: tOr, text: two}, 2, nil
	case "<<":
		return token{kind: tShl, text: two}, 2, nil
	case ">>":
		return token{kind: tShr, text: two}, 2, nil
	case "==":
		return token{kind: tEq, text: two}, 2, nil
	case "!=":
		return token{kind: tNeq, text: two}, 2, nil
	case "<=":
		return token{kind: tLe, text: two}, 2, nil
	case ">=":
		return token{kind: tGe, text: two}, 2, nil
	}
	if k, ok := map[byte]tokKind{
		'(': tLParen, ')': tRParen, '[': tLBrack, ']': tRBrack, ':': tColon, '/': tSlash,
		'+': tPlus, '-': tMinus, '*': tStar, '%': tPercent, '&': tAmp, '|': tPipe, '^': tCaret,
		'=': tEq, '<': tLt, '>': tGt, '!': tNot,
	}[c]; ok {
		if c == ':' && two == "::" {
			if t, n, ok := lexAddr(s, i); ok {
				return t, n, nil
			}
		}
		return token{kind: k, text: string(c)}, 1, nil
	}
	if c == '\\' {
		j := i + 1
		for j < len(s) && strings.IndexByte(" \t\r\n!()", s[j]) < 0 {
			j++
		}
		if j == i+1 {
			return token{}, 0, errAt(i, "a backslash must be followed by a name")
		}
		return token{kind: tName, text: s[i+1 : j]}, j - i, nil
	}
	if !isAlnum(c) {
		return token{}, 0, errAt(i, "unexpected character %q", c)
	}
	if t, n, ok := lexAddr(s, i); ok {
		return t, n, nil
	}
	j := i
	for j < len(s) && isWord(s[j]) {
		j++
	}
	t, err := word(s[i:j], i)
	return t, j - i, err
}

// lexAddr recognises an IPv6 or colon-separated Ethernet address at i.
func lexAddr(s string, i int) (token, int, bool) {
	j := i
	colon := false
	for j < len(s) && (isHex(s[j]) || s[j] == ':' || s[j] == '.') {
		colon = colon || s[j] == ':'
		j++
	}
	if !colon || j < len(s) && isWord(s[j]) {
		return token{}, 0, false
	}
	text := s[i:j]
	if mac, ok := parseMAC(text); ok {
		return token{kind: tMAC, text: text, mac: mac}, j - i, true
	}
	if a, err := netip.ParseAddr(text); err == nil && a.Is6() && a.Zone() == "" {
		return token{kind: tHost6, text: text, ip6: a}, j - i, true
	}
	return token{}, 0, false
}

// parseMAC accepts the forms libpcap's scanner does: six groups of one or
// two hex digits separated by ':', '-' or '.', three groups of four
// separated by '.', and twelve hex digits.
func parseMAC(s string) (net.HardwareAddr, bool) {
	if len(s) == 12 {
		var b [6]byte
		for k := range 6 {
			v, err := strconv.ParseUint(s[2*k:2*k+2], 16, 8)
			if err != nil {
				return nil, false
			}
			b[k] = byte(v)
		}
		return b[:], true
	}
	for _, sep := range []string{":", "-", "."} {
		parts := strings.Split(s, sep)
		if len(parts) == 6 {
			b := make(net.HardwareAddr, 6)
			for k, p := range parts {
				if len(p) < 1 || len(p) > 2 || !allHex(p) {
					return nil, false
				}
				v, _ := strconv.ParseUint(p, 16, 8)
				b[k] = byte(v)
			}
			return b, true
		}
		if sep == "." && len(parts) == 3 {
			b := make(net.HardwareAddr, 0, 6)
			for _, p := range parts {
				if len(p) != 4 || !allHex(p) {
					return nil, false
				}
				v, _ := strconv.ParseUint(p, 16, 16)
				b = append(b, byte(v>>8), byte(v))
			}
			return b, true
		}
	}
	return nil, false
}

func allHex(s string) bool {
	for i := range len(s) {
		if !isHex(s[i]) {
			return false
		}
	}
	return s != ""
}

func allDigits(s string) bool {
	for i := range len(s) {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// word classifies a run of word characters.
func word(w string, pos int) (token, error) {
	switch w {
	case "and":
		return token{kind: tAnd, text: w}, nil
	case "or":
		return token{kind: tOr, text: w}, nil
	case "not":
		return token{kind: tNot, text: w}, nil
	}
	if kw, ok := keywords[w]; ok {
		return token{kind: tKw, kw: kw, text: w}, nil
	}
	if v, ok := named[w]; ok {
		return token{kind: tNum, num: v, text: w}, nil
	}
	// Twelve hex digits are an Ethernet address before they are a number,
	// as in libpcap's scanner.
	if mac, ok := parseMAC(w); ok && (len(w) == 12 && allHex(w) || strings.ContainsAny(w, "-.")) {
		return token{kind: tMAC, mac: mac, text: w}, nil
	}
	if allDigits(w) || (strings.HasPrefix(w, "0x") || strings.HasPrefix(w, "0X")) && allHex(w[2:]) {
		v, err := number(w, pos)
		return token{kind: tNum, num: v, text: w}, err
	}
	if parts := strings.Split(w, "."); len(parts) >= 2 && len(parts) <= 4 {
		ok := true
		for _, p := range parts {
			ok = ok && allDigits(p)
		}
		if ok {
			return token{kind: tHost4, text: w}, nil
		}
	}
	return token{kind: tName, text: w}, nil
}

// number parses a decimal, 0x hexadecimal or 0 octal number, as libpcap
// does.
func number(w string, pos int) (uint32, error) {
	base, digits := 10, w
	switch {
	case strings.HasPrefix(w, "0x") || strings.HasPrefix(w, "0X"):
		base, digits = 16, w[2:]
	case len(w) > 1 && w[0] == '0':
		base, digits = 8, w[1:]
		for i := range len(digits) {
			if digits[i] > '7' {
				return 0, errAt(pos, "number %s contains non-octal digit", w)
			}
		}
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, errAt(pos, "number %s overflows 32 bits", w)
	}
	return uint32(v), nil
}
