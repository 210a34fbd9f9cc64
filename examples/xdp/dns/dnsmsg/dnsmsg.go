// Package dnsmsg reads DNS queries and writes DNS responses in the wire
// format of RFC 1035, with the EDNS(0) OPT record of RFC 6891: just what
// an authoritative server answering A and AAAA needs, written by hand so
// that the dns example depends on nothing but the standard library.
//
// ParseQuery reads a message into a Query the caller owns and reuses, and
// WriteResponse writes the answer into a buffer the caller owns, which may
// be the very bytes the query arrived in (a Query keeps copies of what it
// needs): neither allocates. ParseQuery trusts nothing: every length,
// count, label and compression pointer is checked against the message, and
// a malformed message is an error, never a panic (FuzzParseQuery).
package dnsmsg

import (
	"encoding/binary"
	"errors"
	"strings"
)

// Header flag bits (the second 16-bit word of the header).
const (
	FlagQR = 1 << 15 // a response
	FlagAA = 1 << 10 // authoritative answer
	FlagTC = 1 << 9  // truncated
	FlagRD = 1 << 8  // recursion desired
	FlagRA = 1 << 7  // recursion available
	FlagAD = 1 << 5  // authentic data
	FlagCD = 1 << 4  // checking disabled
)

// Opcodes.
const (
	OpQuery  = 0
	OpIQuery = 1
	OpStatus = 2
	OpNotify = 4
	OpUpdate = 5
)

// Response codes. BadVers needs EDNS: its upper bits go in the OPT record.
const (
	RCodeNoError  = 0
	RCodeFormErr  = 1
	RCodeServFail = 2
	RCodeNXDomain = 3
	RCodeNotImp   = 4
	RCodeRefused  = 5
	RCodeBadVers  = 16
)

// Record types and classes.
const (
	TypeA    = 1
	TypeNS   = 2
	TypeSOA  = 6
	TypeMX   = 15
	TypeTXT  = 16
	TypeAAAA = 28
	TypeOPT  = 41
	TypeIXFR = 251
	TypeAXFR = 252
	TypeANY  = 255

	ClassIN  = 1
	ClassCH  = 3
	ClassANY = 255
)

// Sizes.
const (
	HeaderLen = 12
	// MaxName is the longest name in wire format, length bytes and the
	// root label included.
	MaxName = 255
	// MaxLabel is the longest label.
	MaxLabel = 63
	// MinUDPSize is what a client without EDNS can receive, and the floor
	// of what one with EDNS advertises.
	MinUDPSize = 512
	// OPTLen is the size of an OPT record with no options.
	OPTLen = 11
)

// Errors of ParseQuery. ErrShort and ErrResponse mean "no answer at all"
// (there is no header to answer, or the message is itself an answer);
// the others mean the header can be answered with FORMERR.
var (
	ErrShort    = errors.New("dns: shorter than a header")
	ErrResponse = errors.New("dns: a response, not a query")
	ErrFormat   = errors.New("dns: malformed message")
	ErrCount    = errors.New("dns: not exactly one question")
)

// Query is what a server needs of a request. ParseQuery fills it; it
// holds no reference to the message.
type Query struct {
	// ID, Opcode and the RD and CD flags are echoed in the response.
	ID     uint16
	Opcode uint8
	RD, CD bool
	// QDCount is the question count the header claimed.
	QDCount uint16
	// The question: its name in wire format (uncompressed, case as the
	// client wrote it), type and class.
	name   [MaxName]byte
	nlen   int
	QType  uint16
	QClass uint16
	// EDNS is true when the query carries an OPT record; UDPSize is the
	// payload size it advertises, Version its EDNS version, DO its DNSSEC
	// OK bit.
	EDNS    bool
	UDPSize uint16
	Version uint8
	DO      bool
}

// Name returns the question name in wire format. It aliases q.
func (q *Query) Name() []byte { return q.name[:q.nlen] }

// NameString returns the question name in presentation format, with a
// trailing dot; it allocates.
func (q *Query) NameString() string { return NameString(q.Name()) }

// ParseQuery reads msg into q. A header that cannot be read gives ErrShort
// (q untouched), a response ErrResponse; after that q holds at least the ID,
// opcode and flags, so a caller can answer any other error with
// RCodeFormErr (ErrFormat: something does not parse; ErrCount: the
// question count is not 1).
func ParseQuery(msg []byte, q *Query) error {
	if len(msg) < HeaderLen {
		return ErrShort
	}
	flags := binary.BigEndian.Uint16(msg[2:])
	if flags&FlagQR != 0 {
		return ErrResponse
	}
	*q = Query{
		ID:      binary.BigEndian.Uint16(msg[0:]),
		Opcode:  uint8(flags>>11) & 0x0f,
		RD:      flags&FlagRD != 0,
		CD:      flags&FlagCD != 0,
		QDCount: binary.BigEndian.Uint16(msg[4:]),
	}
	an := int(binary.BigEndian.Uint16(msg[6:]))
	ns := int(binary.BigEndian.Uint16(msg[8:]))
	ar := int(binary.BigEndian.Uint16(msg[10:]))
	if q.QDCount != 1 {
		return ErrCount
	}
	off := HeaderLen
	n, next, err := readName(msg, off, q.name[:0])
	if err != nil {
		return err
	}
	q.nlen = len(n)
	off = next
	if off+4 > len(msg) {
		return ErrFormat
	}
	q.QType = binary.BigEndian.Uint16(msg[off:])
	q.QClass = binary.BigEndian.Uint16(msg[off+2:])
	off += 4
	// Answer and authority records have no place in a query we answer,
	// but they must at least be well formed; the additional section may
	// hold one OPT record.
	var scratch [MaxName]byte
	for i := 0; i < an+ns+ar; i++ {
		owner, next, err := readName(msg, off, scratch[:0])
		if err != nil {
			return err
		}
		off = next
		if off+10 > len(msg) {
			return ErrFormat
		}
		typ := binary.BigEndian.Uint16(msg[off:])
		class := binary.BigEndian.Uint16(msg[off+2:])
		ttl := binary.BigEndian.Uint32(msg[off+4:])
		rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		if off+rdlen > len(msg) {
			return ErrFormat
		}
		if typ == TypeOPT {
			// RFC 6891 6.1.1: one, in the additional section, owned
			// by the root.
			if i < an+ns || q.EDNS || len(owner) != 1 {
				return ErrFormat
			}
			if err := checkOptions(msg[off : off+rdlen]); err != nil {
				return err
			}
			q.EDNS = true
			q.UDPSize = max(class, MinUDPSize)
			q.Version = uint8(ttl >> 16)
			q.DO = ttl&0x8000 != 0
		}
		off += rdlen
	}
	return nil
}

// checkOptions checks that an OPT record's data is a sequence of whole
// options (code, length, data).
func checkOptions(b []byte) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return ErrFormat
		}
		l := int(binary.BigEndian.Uint16(b[2:]))
		if 4+l > len(b) {
			return ErrFormat
		}
		b = b[4+l:]
	}
	return nil
}

// readName reads the name at off, following compression pointers, appends
// it to dst in uncompressed wire format and returns it with the offset just
// past the name where it started. Each pointer must point before the place
// the last one led to (before the name's start for the first), so that no
// loop is possible and no byte is read twice; a label may be at most 63
// bytes, the name at most 255; the label types 0x40 and 0x80 are refused.
func readName(msg []byte, off int, dst []byte) ([]byte, int, error) {
	end := -1    // where the name ends in the message, once a pointer is taken
	floor := off // a pointer must lead below this
	for {
		if off >= len(msg) {
			return nil, 0, ErrFormat
		}
		c := int(msg[off])
		switch c & 0xc0 {
		case 0x00:
			if c == 0 {
				if len(dst)+1 > MaxName {
					return nil, 0, ErrFormat
				}
				dst = append(dst, 0)
				if end < 0 {
					end = off + 1
				}
				return dst, end, nil
			}
			if off+1+c > len(msg) || len(dst)+1+c+1 > MaxName {
				return nil, 0, ErrFormat
			}
			dst = append(dst, msg[off:off+1+c]...)
			off += 1 + c
		case 0xc0:
			if off+2 > len(msg) {
				return nil, 0, ErrFormat
			}
			ptr := int(binary.BigEndian.Uint16(msg[off:]) & 0x3fff)
			if ptr >= floor {
				return nil, 0, ErrFormat
			}
			if end < 0 {
				end = off + 2
			}
			off, floor = ptr, ptr
		default:
			return nil, 0, ErrFormat
		}
	}
}

// Record is an answer: the question's name (written as a pointer to it),
// a type, a TTL and the data (4 bytes for A, 16 for AAAA).
type Record struct {
	Type uint16
	TTL  uint32
	Data []byte
}

// Response is what WriteResponse writes.
type Response struct {
	// RCode is the response code (RCodeBadVers sets the OPT record's
	// extended bits and needs an EDNS query).
	RCode int
	// Authoritative sets AA.
	Authoritative bool
	// Question includes the question section (every response but one
	// to a question that could not be read).
	Question bool
	// Answers are the answer records.
	Answers []Record
}

// ServerUDPSize is the payload size a response advertises and the most it
// ever uses: the value DNS flag day 2020 settled on, which fits in any
// path's MTU unfragmented.
const ServerUDPSize = 1232

// Limit is the largest response q may receive: 512 bytes without EDNS, else
// what it advertises, at most ServerUDPSize.
func Limit(q *Query) int {
	if !q.EDNS {
		return MinUDPSize
	}
	return min(int(q.UDPSize), ServerUDPSize)
}

// WriteResponse writes the response to q into dst, which may hold the
// query itself, and returns its length. If the answers would take it over
// Limit(q) (or over len(dst)), it is sent without them and with TC set, as
// RFC 1035 says, for the client to ask again over TCP. It returns 0 only
// when not even that fits, or when r is inconsistent (BADVERS without
// EDNS, an answer whose data is over 65535 bytes).
func WriteResponse(dst []byte, q *Query, r Response) int {
	limit := min(Limit(q), len(dst))
	if r.RCode > 0x0f && !q.EDNS || r.RCode < 0 || r.RCode > 0xfff {
		return 0
	}
	name := q.Name()
	base := HeaderLen
	if r.Question {
		base += len(name) + 4
	}
	opt := 0
	if q.EDNS {
		opt = OPTLen
	}
	size := base + opt
	for _, a := range r.Answers {
		if len(a.Data) > 0xffff {
			return 0
		}
		size += 2 + 10 + len(a.Data)
	}
	answers, tc := r.Answers, false
	if size > limit {
		answers, tc, size = nil, true, base+opt
	}
	if size > limit || (r.Question && len(name) == 0) {
		return 0
	}
	flags := uint16(FlagQR) | uint16(q.Opcode&0x0f)<<11 | uint16(r.RCode&0x0f)
	if r.Authoritative {
		flags |= FlagAA
	}
	if tc {
		flags |= FlagTC
	}
	if q.RD {
		flags |= FlagRD
	}
	if q.CD {
		flags |= FlagCD
	}
	binary.BigEndian.PutUint16(dst[0:], q.ID)
	binary.BigEndian.PutUint16(dst[2:], flags)
	binary.BigEndian.PutUint16(dst[4:], b2u(r.Question))
	binary.BigEndian.PutUint16(dst[6:], uint16(len(answers)))
	binary.BigEndian.PutUint16(dst[8:], 0)
	binary.BigEndian.PutUint16(dst[10:], uint16(opt/OPTLen))
	off := HeaderLen
	if r.Question {
		off += copy(dst[off:], name)
		binary.BigEndian.PutUint16(dst[off:], q.QType)
		binary.BigEndian.PutUint16(dst[off+2:], q.QClass)
		off += 4
	}
	for _, a := range answers {
		// The owner is the question's name, at offset 12.
		binary.BigEndian.PutUint16(dst[off:], 0xc000|HeaderLen)
		binary.BigEndian.PutUint16(dst[off+2:], a.Type)
		binary.BigEndian.PutUint16(dst[off+4:], ClassIN)
		binary.BigEndian.PutUint32(dst[off+6:], a.TTL)
		binary.BigEndian.PutUint16(dst[off+10:], uint16(len(a.Data)))
		off += 12
		off += copy(dst[off:], a.Data)
	}
	if q.EDNS {
		dst[off] = 0 // the root
		binary.BigEndian.PutUint16(dst[off+1:], TypeOPT)
		binary.BigEndian.PutUint16(dst[off+3:], ServerUDPSize)
		// TTL: extended RCODE, version 0, no flags (we sign nothing,
		// so DO is not echoed).
		binary.BigEndian.PutUint32(dst[off+5:], uint32(r.RCode>>4)<<24)
		binary.BigEndian.PutUint16(dst[off+9:], 0)
		off += OPTLen
	}
	return off
}

func b2u(b bool) uint16 {
	if b {
		return 1
	}
	return 0
}

// ErrName is what ParseName returns for a name it cannot encode.
var ErrName = errors.New("dns: not a valid domain name")

// ParseName encodes a name in presentation format ("www.example.test",
// with or without the trailing dot) into wire format, lowercased. It takes
// letters, digits, hyphens and underscores in labels of 1 to 63 bytes and
// no more than 255 bytes in all; "." alone is the root.
func ParseName(s string) ([]byte, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return []byte{0}, nil
	}
	out := make([]byte, 0, len(s)+2)
	for _, l := range strings.Split(s, ".") {
		if len(l) == 0 || len(l) > MaxLabel {
			return nil, ErrName
		}
		out = append(out, byte(len(l)))
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return nil, ErrName
			}
			out = append(out, c)
		}
	}
	out = append(out, 0)
	if len(out) > MaxName {
		return nil, ErrName
	}
	return out, nil
}

// NameString writes a wire-format name in presentation format, with a
// trailing dot, escaping dots and bytes outside printable ASCII the way
// zone files do (\. and \DDD). A malformed name gives what it can read.
func NameString(wire []byte) string {
	var b strings.Builder
	for i := 0; i < len(wire); {
		l := int(wire[i])
		if l == 0 {
			break
		}
		i++
		for j := 0; j < l && i < len(wire); j, i = j+1, i+1 {
			c := wire[i]
			switch {
			case c == '.' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x21 || c > 0x7e:
				b.WriteByte('\\')
				b.WriteByte('0' + c/100)
				b.WriteByte('0' + c/10%10)
				b.WriteByte('0' + c%10)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('.')
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

// Lower appends the wire-format name to dst with ASCII letters lowercased:
// DNS names compare without regard to ASCII case (RFC 4343).
func Lower(dst, wire []byte) []byte {
	for _, c := range wire {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// AppendQuery appends a query for name (wire format) of type qtype to dst,
// with RD set and, when udpSize is not 0, an OPT record advertising it: what
// a stub resolver sends. It is for tests and tools; a server never needs it.
func AppendQuery(dst []byte, id uint16, name []byte, qtype uint16, udpSize uint16) []byte {
	var h [HeaderLen]byte
	binary.BigEndian.PutUint16(h[0:], id)
	binary.BigEndian.PutUint16(h[2:], FlagRD)
	binary.BigEndian.PutUint16(h[4:], 1)
	if udpSize != 0 {
		binary.BigEndian.PutUint16(h[10:], 1)
	}
	dst = append(dst, h[:]...)
	dst = append(dst, name...)
	dst = binary.BigEndian.AppendUint16(dst, qtype)
	dst = binary.BigEndian.AppendUint16(dst, ClassIN)
	if udpSize != 0 {
		dst = append(dst, 0, 0, TypeOPT)
		dst = binary.BigEndian.AppendUint16(dst, udpSize)
		dst = append(dst, 0, 0, 0, 0, 0, 0)
	}
	return dst
}
