// Package layout holds the frame offsets both steering compilers read at:
// the eBPF match blocks (filter) and the classic-BPF compiler (filter/cbpf).
// Offsets count from the frame base (past one VLAN tag where there is one)
// of a frame whose IPv4 header has no options and whose IPv6 header has no
// extension headers; each compiler checks that before it reads past the IP
// header.
package layout

// Offsets from the frame base, in bytes.
const (
	EtherType  = 12
	IPv4VerIHL = 14
	IPv4Frag   = 20
	IPv4Proto  = 23
	IPv4Src    = 26
	IPv4Dst    = 30
	IPv4L4     = 34
	IPv6Next   = 20
	IPv6Src    = 22
	IPv6Dst    = 38
	IPv6L4     = 54
)
