package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/xdp/dns/dnsmsg"
)

// resolver is Go's own stub resolver (not the C library's) asking server,
// its sockets made in p's namespace whichever goroutine dials.
func resolver(p bed.Port, server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var c net.Conn
			err := p.Do(func() (err error) {
				var d net.Dialer
				c, err = d.DialContext(ctx, network, server)
				return err
			})
			return c, err
		},
	}
}

// askAll asks the resolver for every name of the zone, A and AAAA, and for
// a name the zone lacks, prints each answer and returns how many were
// wrong.
func askAll(ctx context.Context, p bed.Port, server string, z *Zone, w io.Writer) int {
	r := resolver(p, server)
	bad := 0
	for _, name := range z.Names() {
		for _, network := range []string{"ip4", "ip6"} {
			want := z.Addrs(name, network == "ip6")
			got, err := lookup(ctx, r, network, name)
			ok := slices.Equal(got, want) && (err == nil) == (len(want) > 0)
			if !ok {
				bad++
			}
			fmt.Fprintf(w, "  %s %-4s %-24s %s\n", mark(ok), network, name, answerString(got, err))
		}
	}
	for _, name := range []string{"nonexistent.example.test.", "www.example.invalid."} {
		_, err := lookup(ctx, r, "ip", name)
		var de *net.DNSError
		ok := errors.As(err, &de) && de.IsNotFound
		if !ok {
			bad++
		}
		fmt.Fprintf(w, "  %s %-4s %-24s %s\n", mark(ok), "ip", name, answerString(nil, err))
	}
	return bad
}

// lookup asks for name's addresses of one family, sorted.
func lookup(ctx context.Context, r *net.Resolver, network, name string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := r.LookupNetIP(ctx, network, name)
	for i := range got {
		got[i] = got[i].Unmap()
	}
	slices.SortFunc(got, func(a, b netip.Addr) int { return a.Compare(b) })
	return got, err
}

func mark(ok bool) string {
	if ok {
		return "ok   "
	}
	return "WRONG"
}

func answerString(got []netip.Addr, err error) string {
	var de *net.DNSError
	switch {
	case errors.As(err, &de) && de.IsNotFound:
		return "no such host"
	case err != nil:
		return err.Error()
	}
	return fmt.Sprint(got)
}

// Names lists the zone's names that have addresses, sorted, in
// presentation format.
func (z *Zone) Names() []string {
	var ns []string
	for w, e := range z.names {
		if len(e.a)+len(e.aaaa) > 0 {
			ns = append(ns, dnsmsg.NameString([]byte(w)))
		}
	}
	slices.Sort(ns)
	return ns
}

// Addrs returns a name's IPv4 (or IPv6) addresses, sorted.
func (z *Zone) Addrs(name string, v6 bool) []netip.Addr {
	wire, err := dnsmsg.ParseName(name)
	if err != nil {
		return nil
	}
	e := z.names[string(wire)]
	if e == nil {
		return nil
	}
	var out []netip.Addr
	if v6 {
		for _, a := range e.aaaa {
			out = append(out, netip.AddrFrom16([16]byte(a)))
		}
	} else {
		for _, a := range e.a {
			out = append(out, netip.AddrFrom4([4]byte(a)))
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}
