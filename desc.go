package packetio

// Desc names one frame's bytes inside a Region by offset. It is a value, not
// a pointer, and it is the unit of ownership: whoever holds a Desc owns the
// bytes it names until it hands the Desc on.
//
// The field layout matches AF_XDP's struct xdp_desc, but backends convert
// field by field and never rely on the two being the same in memory.
type Desc struct {
	// Addr is the byte offset of the first byte of the Ethernet header
	// inside the Region. It may lie past the start of its frame (headroom).
	Addr uint64
	// Len is the number of valid bytes at Addr: the Ethernet frame without
	// its FCS.
	Len uint32
	// Options holds flag bits. The low 16 bits belong to packetio; bits from
	// OptionsBackendShift up belong to the backend.
	Options uint32
}

// Option bits carried in Desc.Options. A backend that cannot express a bit
// never sets it. Transmit ignores every bit except OptContinued on backends
// that support chains, so a forwarder can transmit a received Desc as is.
const (
	// OptContinued marks a frame as one piece of a larger packet: more
	// pieces follow, and the last piece lacks the bit.
	OptContinued uint32 = 1 << 0
	// OptChecksumOK says the device verified the L3 and L4 checksums of a
	// received packet and found them good.
	OptChecksumOK uint32 = 1 << 1
	// OptL3ChecksumOK says the device verified the IP header checksum of a
	// received packet. It says nothing about the payload.
	OptL3ChecksumOK uint32 = 1 << 2

	// OptionsBackendShift is the first Options bit a backend may use for
	// its own purposes.
	OptionsBackendShift = 16
)
