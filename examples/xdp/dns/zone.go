package main

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/packetio/packetio/examples/xdp/dns/dnsmsg"
)

// Zone is the static data the server answers from: names with their IPv4
// and IPv6 addresses. Every ancestor of a name exists too, with no data
// (an "empty non-terminal": example.test when only www.example.test was
// given), so a question about one is answered with no records rather than
// NXDOMAIN.
type Zone struct {
	names map[string]*entry // by lowercased wire-format name
	ttl   uint32
}

type entry struct {
	a, aaaa [][]byte
}

// ParseZone reads -zone: "name=addr,name=addr,...", a name repeated for
// each of its addresses, IPv4 addresses giving A records and IPv6 ones
// AAAA. Names are case-insensitive. ttl is every record's TTL.
func ParseZone(spec string, ttl uint32) (*Zone, error) {
	z := &Zone{names: map[string]*entry{}, ttl: ttl}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("zone entry %q: want name=address", item)
		}
		wire, err := dnsmsg.ParseName(strings.TrimSpace(name))
		if err != nil || len(wire) == 1 {
			return nil, fmt.Errorf("zone entry %q: %q is not a domain name", item, name)
		}
		ip, err := netip.ParseAddr(strings.TrimSpace(addr))
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("zone entry %q: %q is not an IP address", item, addr)
		}
		e := z.names[string(wire)]
		if e == nil {
			e = &entry{}
			z.names[string(wire)] = e
		}
		if ip.Is4() || ip.Is4In6() {
			a := ip.Unmap().As4()
			e.a = append(e.a, a[:])
		} else {
			a := ip.As16()
			e.aaaa = append(e.aaaa, a[:])
		}
		// The ancestors, up to and not including the root.
		for w := wire[1+wire[0]:]; len(w) > 1; w = w[1+w[0]:] {
			if z.names[string(w)] == nil {
				z.names[string(w)] = &entry{}
			}
		}
	}
	if len(z.names) == 0 {
		return nil, fmt.Errorf("zone %q has no entries", spec)
	}
	return z, nil
}

// String lists the zone, one name a line.
func (z *Zone) String() string {
	var lines []string
	for w, e := range z.names {
		if len(e.a)+len(e.aaaa) == 0 {
			continue
		}
		var as []string
		for _, a := range e.a {
			as = append(as, netip.AddrFrom4([4]byte(a)).String())
		}
		for _, a := range e.aaaa {
			as = append(as, netip.AddrFrom16([16]byte(a)).String())
		}
		lines = append(lines, fmt.Sprintf("  %-30s %s", dnsmsg.NameString([]byte(w)), strings.Join(as, " ")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Verdict is what the server made of a message, for its counters.
type Verdict uint8

// Verdicts.
const (
	Dropped  Verdict = iota // not answered: no header, or a response
	Answered                // NOERROR with records
	NoData                  // NOERROR, the name exists, no records of the type
	NXDomain                // the name does not exist
	Refused                 // a class, or a zone transfer, this server does not serve
	NotImp                  // an opcode other than QUERY
	FormErr                 // malformed, or not one question
	BadVers                 // an EDNS version other than 0
	numVerdicts
)

var verdictNames = [numVerdicts]string{"dropped", "answered", "nodata", "nxdomain", "refused", "notimp", "formerr", "badvers"}

// String names the verdict as the counters print it.
func (v Verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", v)
}

// Answer reads the message msg and writes the response into out, which may
// be the very bytes of msg, returning its length (0: send nothing) and the
// verdict. q and recs are the caller's scratch, reused from call to call,
// so that answering allocates nothing.
func (z *Zone) Answer(msg []byte, q *dnsmsg.Query, out []byte, recs []dnsmsg.Record) (int, Verdict) {
	switch err := dnsmsg.ParseQuery(msg, q); err {
	case nil:
	case dnsmsg.ErrShort, dnsmsg.ErrResponse:
		return 0, Dropped
	default:
		return dnsmsg.WriteResponse(out, q, dnsmsg.Response{RCode: dnsmsg.RCodeFormErr}), FormErr
	}
	refuse := func(rcode int, v Verdict) (int, Verdict) {
		return dnsmsg.WriteResponse(out, q, dnsmsg.Response{RCode: rcode, Question: true}), v
	}
	switch {
	case q.Opcode != dnsmsg.OpQuery:
		return refuse(dnsmsg.RCodeNotImp, NotImp)
	case q.EDNS && q.Version != 0:
		return refuse(dnsmsg.RCodeBadVers, BadVers)
	case q.QClass != dnsmsg.ClassIN:
		return refuse(dnsmsg.RCodeRefused, Refused)
	case q.QType == dnsmsg.TypeAXFR || q.QType == dnsmsg.TypeIXFR:
		return refuse(dnsmsg.RCodeRefused, Refused)
	}
	var key [dnsmsg.MaxName]byte
	e := z.names[string(dnsmsg.Lower(key[:0], q.Name()))]
	if e == nil {
		return dnsmsg.WriteResponse(out, q, dnsmsg.Response{RCode: dnsmsg.RCodeNXDomain, Authoritative: true, Question: true}), NXDomain
	}
	recs = recs[:0]
	if q.QType == dnsmsg.TypeA || q.QType == dnsmsg.TypeANY {
		for _, a := range e.a {
			recs = append(recs, dnsmsg.Record{Type: dnsmsg.TypeA, TTL: z.ttl, Data: a})
		}
	}
	if q.QType == dnsmsg.TypeAAAA || q.QType == dnsmsg.TypeANY {
		for _, a := range e.aaaa {
			recs = append(recs, dnsmsg.Record{Type: dnsmsg.TypeAAAA, TTL: z.ttl, Data: a})
		}
	}
	v := Answered
	if len(recs) == 0 {
		v = NoData
	}
	return dnsmsg.WriteResponse(out, q, dnsmsg.Response{RCode: dnsmsg.RCodeNoError, Authoritative: true, Question: true, Answers: recs}), v
}
