package pcapfilter

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"
)

// The grammar is libpcap's (grammar.y), by recursive descent:
//
//	expr  = term { ("and" | "or") (term | id) }   left to right, one precedence
//	term  = "not" term | rterm
//	rterm = head id | "(" expr ")" | pname | arth relop arth | other
//	head  = [pname] [dqual] [aqual] | [pname] "proto"   (not empty)
//	id    = "not" id | "(" pid ")" | number | address [ "/" len | "mask" address ] | name
//	pid   = id-not-in-parens { ("and" | "or") id }
//	other = [pname] ("broadcast" | "multicast") | "vlan" [number] | "less" n | "greater" n
//
// An id takes the qualifiers of the term before it: "host a or b" is
// "host a or host b", "port 53 or 80" is "port 53 or port 80".

type parser struct {
	expr  string
	toks  []token
	i     int
	o     offs
	depth int
	folds []folded
}

// A folded is an arithmetic expression, expr[from:to], that a fold of
// binary makes 0 without computing the operand it drops (as libpcap's
// optimiser does). exact says the 0 carries no protocol condition either,
// so that libpcap reads the text "0" in its place the same way. The parser
// keeps them for the libpcap comparison, which checks these folds against
// libpcap's unoptimised program of the folded text.
type folded struct {
	from, to int
	exact    bool
}

// maxDepth bounds nesting (parentheses, unary minus; a run of "not" is one
// level), which keeps the parser's backtracking over parentheses cheap.
const maxDepth = 100

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.fail(p.peek(), "the expression is nested more than %d deep", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(t token, format string, args ...any) {
	panic(errAt(t.pos, format, args...))
}

// describe names a token for messages.
func describe(t token) string {
	if t.kind == tEOF {
		return "the end of the expression"
	}
	return strconv.Quote(t.text)
}

func (p *parser) isKw(k keyword) bool { t := p.peek(); return t.kind == tKw && t.kw == k }

// parse compiles the whole expression into a boolean tree; folds lists the
// operands its constant folds dropped.
func parse(expr string) (b bnode, folds []folded, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*Error)
			if !ok {
				panic(r)
			}
			e.Expr = expr
			b, folds, err = nil, nil, e
		}
	}()
	toks, lerr := lex(expr)
	if lerr != nil {
		lerr.(*Error).Expr = expr
		return nil, nil, lerr
	}
	p := &parser{expr: expr, toks: toks, o: offs{lt: 12, nl: 14}}
	if p.peek().kind == tEOF {
		return bConst(true), nil, nil // libpcap: the empty filter takes everything
	}
	b, _ = p.parseExpr(qerr)
	if t := p.peek(); t.kind != tEOF {
		if t.kind == tRParen {
			p.fail(t, "unbalanced %q", ")")
		}
		p.fail(t, "expected \"and\", \"or\" or the end of the expression, found %s", describe(t))
	}
	return b, p.folds, nil
}

func (p *parser) parseExpr(cq qual) (bnode, qual) {
	b, q := p.parseTerm(cq)
	for {
		t := p.peek()
		if t.kind != tAnd && t.kind != tOr {
			return b, q
		}
		p.next()
		if p.peek().kind == tEOF {
			p.fail(p.peek(), "expected a primitive after %q", t.text)
		}
		var r bnode
		if p.idFollows() {
			r, q = p.parseID(q)
		} else {
			r, q = p.parseTerm(q)
		}
		if t.kind == tAnd {
			b = and(b, r)
		} else {
			b = or(b, r)
		}
	}
}

// idFollows decides whether what follows "and"/"or" is a bare id (taking
// the qualifiers before it) or a term, looking ahead as far as libpcap's
// parser can tell: a parenthesised group followed by a comparison or an
// arithmetic operator is arithmetic, so a term.
func (p *parser) idFollows() bool { return p.idAt(p.i) }

func (p *parser) idAt(i int) bool {
	at := func(i int) token {
		if i < len(p.toks) {
			return p.toks[i]
		}
		return p.toks[len(p.toks)-1]
	}
	for at(i).kind == tNot {
		i++
	}
	switch t := at(i); t.kind {
	case tHost4, tHost6, tMAC, tName:
		return true
	case tNum:
		switch at(i + 1).kind {
		case tAnd, tOr, tRParen, tEOF:
			return true
		}
	case tLParen:
		depth, j := 0, i
		for ; j < len(p.toks) && p.toks[j].kind != tEOF; j++ {
			if p.toks[j].kind == tLParen {
				depth++
			} else if p.toks[j].kind == tRParen {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if _, arith := relops[at(j+1).kind]; arith {
			return false
		}
		if _, arith := aluOp[at(j+1).kind]; arith {
			return false
		}
		return p.idAt(i + 1)
	}
	return false
}

func (p *parser) parseTerm(cq qual) (bnode, qual) {
	p.enter()
	defer p.leave()
	// A run of "not" is read in one step, however long (libpcap takes
	// any number): it nests nothing, and only its parity counts.
	negate := false
	for p.peek().kind == tNot {
		t := p.next()
		if p.peek().kind == tEOF {
			p.fail(p.peek(), "expected a primitive after %q", t.text)
		}
		negate = !negate
	}
	b, q := p.parseRterm(cq)
	if negate {
		b = not(b)
	}
	return b, q
}

var pnames = map[keyword]bool{kEther: true, kIP: true, kIP6: true, kARP: true, kRARP: true, kTCP: true, kUDP: true, kICMP: true, kICMP6: true, kSCTP: true, kIGMP: true}

func isQualKw(k keyword) bool {
	switch k {
	case kSrc, kDst, kHost, kNet, kPort, kPortrange, kProto, kGateway, kProtochain:
		return true
	}
	return false
}

func (p *parser) parseRterm(cq qual) (bnode, qual) {
	t := p.peek()
	switch t.kind {
	case tLParen:
		return p.parenTerm(cq)
	case tNum, tMinus:
		return p.parseRelation(), qerr
	case tKw:
	case tEOF:
		p.fail(t, "expected a primitive (host, net, port, ip, tcp, ...), found the end of the expression")
	default:
		p.fail(t, "expected a primitive (host, net, port, ip, tcp, ...), found %s", describe(t))
	}
	switch {
	case pnames[t.kw]:
		nx := p.peekAt(1)
		switch {
		case nx.kind == tLBrack:
			return p.parseRelation(), qerr
		case nx.kind == tKw && (nx.kw == kBroadcast || nx.kw == kMulticast):
			p.next()
			return p.castTerm(kwProto[t.kw], p.next()), qerr
		case nx.kind == tKw && isQualKw(nx.kw):
			p.next()
			return p.headID(kwProto[t.kw], t)
		}
		p.next()
		return p.o.abbrev(kwProto[t.kw], t.pos), qerr
	case isQualKw(t.kw):
		return p.headID(pDefault, t)
	case t.kw == kBroadcast || t.kw == kMulticast:
		return p.castTerm(pDefault, p.next()), qerr
	case t.kw == kLen:
		return p.parseRelation(), qerr
	case t.kw == kVLAN:
		p.next()
		var id uint32
		has := p.peek().kind == tNum || p.peek().kind == tLParen && p.numInParens()
		if has {
			nt := p.peek()
			id = p.pnum()
			if id > 0x0fff {
				p.fail(nt, "VLAN tag %d greater than maximum %d", id, 0x0fff)
			}
		}
		b := p.o.vlan(id, has)
		p.o.lt += 4
		p.o.nl += 4
		return b, qerr
	case t.kw == kLess || t.kw == kGreater:
		p.next()
		nt := p.next()
		if nt.kind != tNum {
			p.fail(nt, "expected a number after %q", t.text)
		}
		if t.kw == kLess {
			return not(lenTest(bpf.JumpGreaterThan, nt.num)), qerr
		}
		return lenTest(bpf.JumpGreaterOrEqual, nt.num), qerr
	case t.kw == kUnsupported:
		panic(unsupportedAt(t.pos, "%q is not supported", t.text))
	}
	p.fail(t, "%q cannot start a primitive", t.text)
	return nil, qerr
}

// numInParens reports whether "(" starts a parenthesised number: vlan (5).
func (p *parser) numInParens() bool {
	n := 0
	for p.peekAt(n).kind == tLParen {
		n++
	}
	return p.peekAt(n).kind == tNum && p.peekAt(n+1).kind == tRParen
}

// wrappedNum reports whether the next tokens are a number in one or more
// parentheses, each closed right after it, and returns the number's token.
func (p *parser) wrappedNum() (token, bool) {
	n := 0
	for p.peekAt(n).kind == tLParen {
		n++
	}
	t := p.peekAt(n)
	if n == 0 || t.kind != tNum {
		return t, false
	}
	for i := 1; i <= n; i++ {
		if p.peekAt(n+i).kind != tRParen {
			return t, false
		}
	}
	return t, true
}

// pnum is a number, possibly in parentheses.
func (p *parser) pnum() uint32 {
	p.enter()
	defer p.leave()
	t := p.next()
	switch t.kind {
	case tNum:
		return t.num
	case tLParen:
		v := p.pnum()
		p.expect(tRParen, "\")\"")
		return v
	}
	p.fail(t, "expected a number, found %s", describe(t))
	return 0
}

func (p *parser) expect(k tokKind, what string) token {
	t := p.next()
	if t.kind != k {
		p.fail(t, "expected %s, found %s", what, describe(t))
	}
	return t
}

// parenTerm is "(" expr ")", or a relation that starts with a parenthesised
// arithmetic expression. It tries the relation first and backs up.
func (p *parser) parenTerm(cq qual) (bnode, qual) {
	start, o, depth, folds := p.i, p.o, p.depth, len(p.folds)
	var relErr *Error
	b, ok := func() (b bnode, ok bool) {
		defer func() {
			if r := recover(); r != nil {
				e, isErr := r.(*Error)
				if !isErr {
					panic(r)
				}
				relErr = e
			}
		}()
		return p.parseRelation(), true
	}()
	if ok {
		return b, qerr
	}
	p.i, p.o, p.depth, p.folds = start, o, depth, p.folds[:folds]
	var boolErr *Error
	func() {
		defer func() {
			if r := recover(); r != nil {
				e, isErr := r.(*Error)
				if !isErr {
					panic(r)
				}
				boolErr = e
			}
		}()
		open := p.next()
		b, _ = p.parseExpr(cq)
		if t := p.peek(); t.kind != tRParen {
			p.fail(t, "expected %q to close the %q at column %d, found %s", ")", "(", open.pos+1, describe(t))
		}
		p.next()
	}()
	if boolErr != nil {
		// Report whichever reading got further.
		if relErr != nil && relErr.Column > boolErr.Column {
			panic(relErr)
		}
		panic(boolErr)
	}
	return b, cq
}

// castTerm is "[pname] broadcast" or "[pname] multicast".
func (p *parser) castTerm(pr proto, t token) bnode {
	if t.kw == kBroadcast {
		switch pr {
		case pDefault, pLink:
			return ether([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, dDst)
		case pIP:
			p.fail(t, "netmask not known, so 'ip broadcast' not supported")
		}
		p.fail(t, "only link-layer/IP broadcast filters supported")
	}
	switch pr {
	case pDefault, pLink:
		return cmp(0, 1, bpf.JumpBitsSet, 1, 0xffffffff)
	case pIP:
		return and(p.o.linktype(etIP, t.pos), cmp(p.o.nl+16, 1, bpf.JumpGreaterOrEqual, 224, 0xffffffff))
	case pIP6:
		return and(p.o.linktype(etIP6, t.pos), eq(p.o.nl+24, 1, 255))
	}
	p.fail(t, "only ether, ip and ip6 multicast filters are supported")
	return nil
}

// headID is "head id": the qualifiers, then what they qualify.
func (p *parser) headID(pr proto, first token) (bnode, qual) {
	q := qual{proto: pr}
	last := first
	if p.isKw(kSrc) || p.isKw(kDst) {
		t := p.next()
		last = t
		q.dir = dSrc
		if t.kw == kDst {
			q.dir = dDst
		}
		if c := p.peek(); (c.kind == tAnd || c.kind == tOr) && p.peekAt(1).kind == tKw && (p.peekAt(1).kw == kSrc || p.peekAt(1).kw == kDst) && p.peekAt(1).kw != t.kw {
			p.next()
			last = p.next()
			q.dir = dOr
			if c.kind == tAnd {
				q.dir = dAnd
			}
		}
	}
	if t := p.peek(); t.kind == tKw {
		switch t.kw {
		case kHost, kNet, kPort, kPortrange:
			last = p.next()
			q.addr = map[keyword]addrKind{kHost: aHost, kNet: aNet, kPort: aPort, kPortrange: aPortrange}[t.kw]
		case kProto:
			if q.dir == dDefault {
				last = p.next()
				q.addr = aProto
			}
		case kGateway:
			panic(unsupportedAt(t.pos, "\"gateway\" is not supported (it needs host names resolved)"))
		case kProtochain:
			panic(unsupportedAt(t.pos, "\"protochain\" is not supported"))
		}
	}
	if last.pos == first.pos && !isQualKw(first.kw) {
		p.fail(p.peek(), "expected a qualifier after %q", first.text)
	}
	if k := p.peek().kind; k == tEOF || k == tAnd || k == tOr || k == tRParen {
		p.fail(p.peek(), "expected %s after %q", wantAfter(q), last.text)
	}
	return p.parseID(q)
}

// wantAfter says what an id with qualifiers q should be, for messages.
func wantAfter(q qual) string {
	switch q.addr {
	case aPort, aPortrange:
		return "a number"
	case aProto:
		return "a protocol number or name"
	case aNet:
		return "a network"
	}
	return "an address"
}

// parseID is an id under the qualifiers cq.
func (p *parser) parseID(cq qual) (bnode, qual) {
	p.enter()
	defer p.leave()
	negate := false // a run of "not", as in parseTerm
	for p.peek().kind == tNot {
		p.next()
		negate = !negate
	}
	var b bnode
	q := cq
	if nt, ok := p.wrappedNum(); ok {
		// A number may stand in any number of parentheses (libpcap's
		// pnum); an address may not.
		p.pnum()
		b = p.nidOf(nt, cq)
	} else if p.peek().kind == tLParen {
		p.next()
		b, q = p.parsePid(cq)
		p.expect(tRParen, "\")\"")
	} else {
		b = p.nid(cq)
	}
	if negate {
		b = not(b)
	}
	return b, q
}

func (p *parser) parsePid(cq qual) (bnode, qual) {
	if _, num := p.wrappedNum(); p.peek().kind == tLParen && !num {
		p.fail(p.peek(), "expected an address or a number, found %q", "(")
	}
	b, q := p.parseID(cq)
	for {
		t := p.peek()
		if t.kind != tAnd && t.kind != tOr {
			return b, q
		}
		p.next()
		var r bnode
		r, q = p.parseID(q)
		if t.kind == tAnd {
			b = and(b, r)
		} else {
			b = or(b, r)
		}
	}
}

// nid is one address, number or name under q.
func (p *parser) nid(q qual) bnode { return p.nidOf(p.next(), q) }

// nidOf is nid for the token t, already taken.
func (p *parser) nidOf(t token, q qual) bnode {
	if q.addr == aUndef && t.kind != tEOF {
		p.fail(t, "%s needs a qualifier here (host, net, port, ...): the term before it has none to lend", describe(t))
	}
	switch t.kind {
	case tNum:
		return p.number(t, q)
	case tHost4:
		switch p.peek().kind {
		case tSlash:
			p.next()
			nt := p.next()
			if nt.kind != tNum {
				p.fail(nt, "expected a prefix length after %q", t.text+"/")
			}
			return p.mcode(t, "", nt.num, q)
		case tKw:
			if p.isKw(kMask) {
				p.next()
				mt := p.next()
				if mt.kind != tHost4 {
					p.fail(mt, "expected a netmask (a dotted address) after \"mask\"")
				}
				return p.mcode(t, mt.text, 0, q)
			}
		}
		return p.host4(t, q)
	case tHost6:
		bits := 128
		if p.peek().kind == tSlash {
			p.next()
			nt := p.next()
			if nt.kind != tNum {
				p.fail(nt, "expected a prefix length after %q", t.text+"/")
			}
			if nt.num > 128 {
				p.fail(nt, "mask length must be <= 128")
			}
			bits = int(nt.num)
		}
		return p.host6(t, bits, q)
	case tMAC:
		if (q.addr == aHost || q.addr == aDefault) && q.proto == pLink {
			return ether(t.mac, q.dir)
		}
		p.fail(t, "ethernet address used in non-ether expression")
	case tName:
		return p.name(t, q)
	case tEOF:
		p.fail(t, "expected %s, found the end of the expression", wantAfter(q))
	}
	p.fail(t, "expected %s, found %s", wantAfter(q), describe(t))
	return nil
}

// number is a bare number under q (libpcap's gen_ncode).
func (p *parser) number(t token, q qual) bnode {
	v := t.num
	switch q.addr {
	case aDefault, aHost, aNet:
		if q.proto == pLink {
			p.fail(t, "illegal link layer address")
		}
		mask := uint32(0xffffffff)
		if q.addr == aNet {
			// A short network number is promoted: net 10 is 10/8.
			for v != 0 && v&0xff000000 == 0 {
				v <<= 8
				mask <<= 8
			}
		}
		return p.o.host(v, mask, q.proto, q.dir, q.addr, t.pos)
	case aPort, aPortrange:
		what := "port"
		if q.addr == aPortrange {
			what = "portrange"
		}
		portProtos(q.proto, what, t.pos)
		if v > 65535 {
			p.fail(t, "illegal port number %d > 65535", v)
		}
		return p.o.ports(v, v, q.proto, q.dir, what, t.pos)
	case aProto:
		return p.o.proto(v, q.proto, q.dir, t.pos)
	}
	p.fail(t, "syntax error")
	return nil
}

// atoin parses a dotted IPv4 address of one to four parts as libpcap's
// __pcap_atoin does: the value, and how many bits were given.
func atoin(s string) (uint32, int, bool) {
	var v uint32
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return 0, 0, false
	}
	for _, part := range parts {
		n, err := strconv.ParseUint(part, 10, 32)
		if err != nil || n > 255 {
			return 0, 0, false
		}
		v = v<<8 | uint32(n)
	}
	return v, 8 * len(parts), true
}

// host4 is a dotted address under q: a host, or with fewer than four parts
// a network (host 10.1 is 10.1.0.0/16 in libpcap).
func (p *parser) host4(t token, q qual) bnode {
	switch q.addr {
	case aPort, aPortrange, aProto:
		p.fail(t, "'%s' modifier applied to ip host", map[addrKind]string{aPort: "port", aPortrange: "portrange", aProto: "proto"}[q.addr])
	}
	if q.proto == pLink {
		p.fail(t, "illegal link layer address")
	}
	v, n, ok := atoin(t.text)
	if !ok {
		p.fail(t, "invalid IPv4 address %q", t.text)
	}
	shift := uint(32 - n)
	return p.o.host(v<<shift, uint32(0xffffffff)<<shift, q.proto, q.dir, q.addr, t.pos)
}

// mcode is "a.b.c.d/len" or "a.b.c.d mask m.m.m.m" (libpcap's gen_mcode).
func (p *parser) mcode(t token, maskText string, bits uint32, q qual) bnode {
	if q.addr == aUndef {
		p.fail(t, "syntax error")
	}
	n, nlen, ok := atoin(t.text)
	if !ok {
		p.fail(t, "invalid IPv4 address %q", t.text)
	}
	n <<= uint(32 - nlen)
	var m uint32
	written := fmt.Sprintf("%s/%d", t.text, bits)
	if maskText != "" {
		mv, mlen, ok := atoin(maskText)
		if !ok {
			p.fail(t, "invalid IPv4 netmask %q", maskText)
		}
		m = mv << uint(32-mlen)
		written = t.text + " mask " + maskText
	} else {
		if bits > 32 {
			p.fail(t, "mask length must be <= 32")
		}
		if bits > 0 {
			m = uint32(0xffffffff) << (32 - bits)
		}
	}
	if n&^m != 0 {
		p.fail(t, "non-network bits set in %q", written)
	}
	if q.addr != aNet {
		p.fail(t, "Mask syntax for networks only")
	}
	return p.o.host(n, m, q.proto, q.dir, q.addr, t.pos)
}

// host6 is an IPv6 address or prefix under q (libpcap's gen_mcode6).
func (p *parser) host6(t token, bits int, q qual) bnode {
	a := t.ip6
	pfx, err := a.Prefix(bits)
	if err != nil {
		p.fail(t, "invalid IPv6 prefix %s/%d", t.text, bits)
	}
	if pfx.Addr() != a {
		p.fail(t, "non-network bits set in \"%s/%d\"", t.text, bits)
	}
	switch q.addr {
	case aDefault, aHost:
		if bits != 128 {
			p.fail(t, "Mask syntax for networks only")
		}
	case aNet:
	case aUndef:
		p.fail(t, "syntax error")
	default:
		p.fail(t, "invalid qualifier against IPv6 address")
	}
	return p.o.host6(netip.AddrFrom16(a.As16()), bits, q.proto, q.dir, q.addr, t.pos)
}

// ipProtocols are the IP protocol names a "proto" accepts (from Debian's
// /etc/protocols, which libpcap consults: the common ones).
var ipProtocols = map[string]uint32{
	"ip": 0, "hopopt": 0, "icmp": 1, "igmp": 2, "ggp": 3, "ipencap": 4, "st": 5, "tcp": 6, "egp": 8,
	"igp": 9, "pup": 12, "udp": 17, "hmp": 20, "xns-idp": 22, "rdp": 27, "iso-tp4": 29, "dccp": 33,
	"xtp": 36, "ddp": 37, "idpr-cmtp": 38, "ipv6": 41, "ipv6-route": 43, "ipv6-frag": 44, "idrp": 45,
	"rsvp": 46, "gre": 47, "esp": 50, "ah": 51, "skip": 57, "ipv6-icmp": 58, "ipv6-nonxt": 59,
	"ipv6-opts": 60, "rspf": 73, "vmtp": 81, "eigrp": 88, "ospf": 89, "ax.25": 93, "ipip": 94,
	"etherip": 97, "encap": 98, "pim": 103, "ipcomp": 108, "vrrp": 112, "l2tp": 115, "isis": 124,
	"sctp": 132, "fc": 133, "mobility-header": 135, "udplite": 136, "mpls-in-ip": 137, "manet": 138,
	"hip": 139, "shim6": 140, "wesp": 141, "rohc": 142, "ethernet": 143,
	"IP": 0, "HOPOPT": 0, "ICMP": 1, "IGMP": 2, "GGP": 3, "IP-ENCAP": 4, "ST": 5, "TCP": 6, "EGP": 8,
	"IGP": 9, "PUP": 12, "UDP": 17, "HMP": 20, "XNS-IDP": 22, "RDP": 27, "ISO-TP4": 29, "DCCP": 33,
	"XTP": 36, "DDP": 37, "IDPR-CMTP": 38, "IPv6": 41, "IPv6-Route": 43, "IPv6-Frag": 44, "IDRP": 45,
	"RSVP": 46, "GRE": 47, "IPSEC-ESP": 50, "IPSEC-AH": 51, "SKIP": 57, "IPv6-ICMP": 58,
	"IPv6-NoNxt": 59, "IPv6-Opts": 60, "RSPF": 73, "VMTP": 81, "EIGRP": 88, "OSPFIGP": 89,
	"AX.25": 93, "IPIP": 94, "ETHERIP": 97, "ENCAP": 98, "PIM": 103, "IPCOMP": 108, "VRRP": 112,
	"L2TP": 115, "IS-IS": 124, "SCTP": 132, "FC": 133, "Mobility-Header": 135, "UDPLite": 136,
	"MPLS-in-IP": 137, "MANET": 138, "HIP": 139, "Shim6": 140, "WESP": 141, "ROHC": 142, "Ethernet": 143,
}

// etherProtocols are libpcap's built-in EtherType and LLC SAP names.
var etherProtocols = map[string]uint32{
	"ip": etIP, "ip6": etIP6, "arp": etARP, "rarp": etRARP, "loopback": 0x9000,
	"decnet": 0x6003, "lat": 0x6004, "sca": 0x6007, "mopdl": 0x6001, "moprc": 0x6002,
	"atalk": 0x809b, "aarp": 0x80f3, "iso": 0xfe, "stp": 0x42, "ipx": 0xe0, "netbeui": 0xf0,
}

// name is a word that is not a keyword, number or address under q.
func (p *parser) name(t token, q qual) bnode {
	switch q.addr {
	case aProto:
		var v uint32
		var ok bool
		switch q.proto {
		case pLink:
			v, ok = etherProtocols[t.text]
			if !ok {
				p.fail(t, "unknown ether proto '%s'", t.text)
			}
		case pDefault, pIP, pIP6:
			v, ok = ipProtocols[t.text]
			if !ok {
				p.fail(t, "unknown ip proto '%s'", t.text)
			}
		default:
			p.fail(t, "unknown protocol: %s", t.text)
		}
		return p.o.proto(v, q.proto, q.dir, t.pos)
	case aPortrange:
		portProtos(q.proto, "portrange", t.pos)
		a, b, ok := scanRange(t.text)
		if !ok {
			panic(unsupportedAt(t.pos, "unknown port in range '%s' (service names are not supported)", t.text))
		}
		for _, v := range []uint64{a, b} {
			if v > 65535 {
				p.fail(t, "illegal port number %d > 65535", v)
			}
		}
		return p.o.ports(uint32(a), uint32(b), q.proto, q.dir, "portrange", t.pos)
	case aPort:
		portProtos(q.proto, "port", t.pos)
		panic(unsupportedAt(t.pos, "unknown port '%s' (service names are not supported: use the number)", t.text))
	case aUndef:
		p.fail(t, "syntax error")
	}
	if q.proto == pLink {
		panic(unsupportedAt(t.pos, "unknown ether host '%s' (host names are not supported: use the address)", t.text))
	}
	panic(unsupportedAt(t.pos, "unknown host '%s' (host names are not resolved: use the address)", t.text))
}

// scanRange reads a port range as libpcap does, with sscanf's "%d-%d":
// decimal digits, a dash, decimal digits, and whatever follows ignored
// (so 443-0x35 is 443-0).
func scanRange(s string) (a, b uint64, ok bool) {
	digits := func(s string) (uint64, string, bool) {
		n := 0
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		if n == 0 || n > 9 {
			return 0, s, false
		}
		v, _ := strconv.ParseUint(s[:n], 10, 32)
		return v, s[n:], true
	}
	a, rest, ok := digits(s)
	if !ok || !strings.HasPrefix(rest, "-") {
		return 0, 0, false
	}
	b, _, ok = digits(rest[1:])
	return a, b, ok
}

// Arithmetic: libpcap's precedence, lowest first: | then & then << >>
// then + - then * /, unary minus above all. ^ and % have none in
// libpcap's grammar (bison shifts over them), so each binds tightest to
// its left and takes everything to its right: a & b ^ c is a & (b ^ c),
// a ^ b & c is a ^ (b & c), 7 % 3 * 2 is 7 % (3 * 2), -2 % 7 is -(2 % 7).
var precedence = map[tokKind]int{
	tPipe: 1, tAmp: 2, tShl: 3, tShr: 3, tPlus: 4, tMinus: 4, tStar: 5, tSlash: 5,
}

const precUnary = 6

var aluOp = map[tokKind]bpf.ALUOp{
	tPipe: bpf.ALUOpOr, tAmp: bpf.ALUOpAnd, tShl: bpf.ALUOpShiftLeft, tShr: bpf.ALUOpShiftRight,
	tPlus: bpf.ALUOpAdd, tMinus: bpf.ALUOpSub, tStar: bpf.ALUOpMul, tSlash: bpf.ALUOpDiv,
	tPercent: bpf.ALUOpMod, tCaret: bpf.ALUOpXor,
}

// relops map a comparison to libpcap's jump and whether it is negated.
var relops = map[tokKind]struct {
	cond     bpf.JumpTest
	reversed bool
}{
	tEq: {bpf.JumpEqual, false}, tNeq: {bpf.JumpEqual, true},
	tGt: {bpf.JumpGreaterThan, false}, tLe: {bpf.JumpGreaterThan, true},
	tGe: {bpf.JumpGreaterOrEqual, false}, tLt: {bpf.JumpGreaterOrEqual, true},
}

func (p *parser) parseRelation() bnode {
	a0 := p.arith(0)
	t := p.next()
	r, ok := relops[t.kind]
	if !ok {
		p.fail(t, "expected a comparison (=, !=, <, <=, >, >=), found %s", describe(t))
	}
	a1 := p.arith(0)
	return relation(r.cond, r.reversed, a0, a1)
}

func (p *parser) arith(min int) arth {
	from := p.peek().pos
	left := p.unary()
	for {
		t := p.peek()
		if t.kind == tCaret || t.kind == tPercent {
			p.next()
			right := p.arith(0)
			left = p.binary(t, left, right, from)
			continue
		}
		prec, ok := precedence[t.kind]
		if !ok || prec < min {
			return left
		}
		p.next()
		right := p.arith(prec + 1)
		left = p.binary(t, left, right, from)
	}
}

// binary combines two values, the text of both starting at from; like
// libpcap, the result keeps only the conditions of the left operand.
func (p *parser) binary(op token, l, r arth, from int) arth {
	v, lost, err := binary(aluOp[op.kind], l.v, r.v)
	if err != nil {
		p.fail(op, "%v", err)
	}
	a := arth{v: v, conds: l.conds}
	if lost != nil {
		exact := a.conds == nil || a.conds == bConst(true)
		p.folds = append(p.folds, folded{from: from, to: p.peek().pos, exact: exact})
	}
	return a
}

func (p *parser) unary() arth {
	p.enter()
	defer p.leave()
	t := p.next()
	switch t.kind {
	case tMinus:
		x := p.arith(precUnary)
		return arth{v: negate(x.v), conds: x.conds}
	case tNum:
		return arth{v: aConst{v: t.num, lit: true}}
	case tLParen:
		a := p.arith(0)
		p.expect(tRParen, "\")\"")
		return a
	case tKw:
		switch {
		case t.kw == kLen:
			return arth{v: aLen{}}
		case pnames[t.kw]:
			if p.peek().kind != tLBrack {
				p.fail(p.peek(), "expected %q after %q in an arithmetic expression", "[", t.text)
			}
			p.next()
			idx := p.arith(0)
			size := 1
			if p.peek().kind == tColon {
				p.next()
				st := p.next()
				if st.kind != tNum {
					p.fail(st, "expected a size (1, 2 or 4) after %q", ":")
				}
				if st.num != 1 && st.num != 2 && st.num != 4 {
					p.fail(st, "data size must be 1, 2, or 4")
				}
				size = int(st.num)
			}
			p.expect(tRBrack, "\"]\"")
			return p.o.load(kwProto[t.kw], idx, size, t.pos)
		}
	}
	p.fail(t, "expected a number, len or proto[offset] in an arithmetic expression, found %s", describe(t))
	return arth{}
}
