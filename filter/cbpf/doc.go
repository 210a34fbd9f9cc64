// Package cbpf compiles a packetio.SteeringFilter into classic BPF
// (golang.org/x/net/bpf instructions), the program a packet socket takes
// with SO_ATTACH_FILTER. It is the classic-BPF twin of filter.Steering,
// which compiles the same filter to the eBPF of an XDP program: both refuse
// the same filters and take the same frames, which a differential fuzz test
// checks (FuzzDifferential).
//
// The program reads the frame the way the eBPF blocks do: offsets past one
// 802.1Q or 802.1ad tag left in the frame, IPv4 ports only without options
// and not on a later fragment, IPv6 protocol and ports only with no
// extension header in between. A VLAN match also takes the tag the kernel
// stripped into the socket buffer's metadata (SKF_AD_VLAN_TAG), which is
// where a receiving Linux host keeps it. The zero filter ("packets
// addressed to this interface") tests the packet type the kernel assigned
// (SKF_AD_PKTTYPE: host, broadcast, multicast).
package cbpf
