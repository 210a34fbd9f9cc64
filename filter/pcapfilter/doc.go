// Package pcapfilter compiles tcpdump filter expressions to classic BPF, in
// pure Go (no cgo, no libpcap), with libpcap's semantics for a dead
// DLT_EN10MB (Ethernet) handle, and turns them into filter.Match values
// through bpfmatch:
//
//	fleet, err := xdp.Open("eth0", xdp.WithFilter(
//		pcapfilter.Match("tcp port 443 and not src net 192.0.2.0/24"),
//	), xdp.WithKeepManagement())
//
// Compile returns the classic program itself (what tcpdump -ddd prints,
// up to layout); CompileMatch returns the match or the error; Match carries
// the error inside the match, for Open to report. Errors are *Error and
// name the column: "pcapfilter: column 12: expected a number after
// "port"". Valid tcpdump syntax this package does not implement gives an
// error that wraps packetio.ErrUnsupported.
//
// # Supported
//
// The grammar is libpcap's, with its precedence and its shorthand:
//
//   - and, or (also && and ||), left to right with equal precedence, so
//     "tcp or udp and port 53" is "(tcp or udp) and port 53"; not (also !)
//     binds tighter; parentheses.
//   - Qualifiers carry over to a bare id: "host a or b", "port 53 or 80",
//     "src host a and not b", "host a and (b or c)".
//   - host, net (a/len, "a mask m", and the short forms: net 10 is
//     10.0.0.0/8, host 10.1 is 10.1.0.0/16), port, portrange lo-hi, with
//     src, dst, "src or dst", "src and dst", and the protocol qualifiers
//     ip, ip6, arp, rarp (host, net) and tcp, udp, sctp (port, portrange).
//     With no protocol, host and net mean IPv4, ARP and RARP, port means
//     TCP, UDP and SCTP over IPv4 and IPv6. IPv6 addresses and prefixes.
//   - ether host, ether src, ether dst (aa:bb:cc:dd:ee:ff, aa-bb-..., aabb.ccdd.eeff
//     and the other forms libpcap takes), ether broadcast, ether multicast
//     (and bare broadcast, multicast), ip multicast, ip6 multicast.
//   - ip, ip6, arp, rarp, tcp, udp, icmp, icmp6, sctp, igmp; proto N,
//     ip proto N, ip6 proto N, ether proto N (also link), with protocol
//     names as \tcp or gre (the common /etc/protocols names) and EtherType
//     names as \ip, \ip6, \arp, \rarp, \loopback.
//   - vlan and vlan N, which, as in libpcap, move the offsets of every
//     primitive after them by 4 (so "vlan 100 and tcp port 22" looks
//     behind the tag, and "vlan and vlan 10" is QinQ).
//   - greater N, less N, len.
//   - Byte tests proto[offset] and proto[offset:size] (size 1, 2 or 4) on
//     ether, ip, ip6, arp, rarp, tcp, udp, icmp, icmp6, sctp and igmp, with
//     arithmetic + - * / % & | ^ << >> and unary minus (libpcap's
//     precedence, in which % and ^ have none), and comparisons = == != <
//     <= > >=. Named constants: tcpflags, tcp-fin, tcp-syn, tcp-rst,
//     tcp-push, tcp-ack, tcp-urg, tcp-ece, tcp-cwr, icmptype, icmpcode,
//     icmp-echo, icmp-echoreply and the other icmp- names, icmp6type,
//     icmp6code and the icmp6- names.
//   - Numbers in decimal, 0x hexadecimal and 0 octal.
//
// The programs follow libpcap's: the IPv4 header length comes from IHL,
// IPv4 port and transport byte tests skip fragments other than the first,
// "ip6 proto" and tcp, udp, icmp6 look past one IPv6 fragment header, a
// port test over IPv6 does not, and nothing looks past a VLAN tag unless
// vlan says so.
//
// # Not supported
//
// Host, network, port and service names (there is no name resolution; use
// addresses and numbers), gateway, protochain, mpls, pppoed, pppoes,
// geneve, the link types other than Ethernet (fddi, tr, wlan, ppp, slip,
// radio), 802.11, ATM, SS7 and pf qualifiers, inbound and outbound,
// ifindex, decnet, atalk, aarp, iso, esis, isis, clnp, stp, ipx, netbeui,
// ah, esp, pim, vrrp, carp, igrp as keywords (ip proto 50 and the like work),
// llc, and ether proto for the IPX and AppleTalk values libpcap gives
// extra encapsulations. "ip broadcast" needs a netmask, which a dead
// handle does not have, as in libpcap. Programs are limited to the 4096
// instructions of classic BPF and expressions to 16 scratch words and 100
// levels of nesting (parentheses and unary minus; a run of "not" nests
// nothing).
//
// # Verdicts
//
// The programs are not byte-identical to libpcap's, but their verdicts are
// the same: the tests compare them with libpcap's (through
// golang.org/x/net/bpf's VM) on hundreds of expressions and hundreds of
// frames, and fuzz the comparison. The one difference is by design: for
// a packet too short for some test (a load past its end fails the whole
// filter, in classic BPF), libpcap's optimiser sometimes drops a test whose
// outcome it finds does not matter, loads and all, so the optimised and
// unoptimised libpcap programs disagree on that packet; these programs
// then give the verdict of libpcap's unoptimised program. An index is
// computed in 32 bits and the load reads from that address: where libpcap
// splits it into an offset and an index register one of which alone is
// past 2^31 ("ether[-4 + len:2]", "ip[-1]"), its interpreter (and the
// kernel's) refuses the packet, though the sum is in it. Arithmetic on
// constants folds as libpcap's optimiser folds it (x & 0 is 0 without
// loading x). libpcap proves some filters match nothing ("ip and arp") and
// refuses them; this package refuses only those whose constants make it
// plain. Where libpcap's optimiser is wrong (it can drop the instruction
// that loads the IPv4 header length with a load it folded away, and keep
// a use of it), these programs are right, and the tests say so.
package pcapfilter
