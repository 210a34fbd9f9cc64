package packetio

// Region is one contiguous block of frame memory, allocated and registered
// once when a device opens. Frames have a fixed, power-of-two size and sit end
// to end: frame i covers [i*FrameSize, (i+1)*FrameSize).
//
// A Region is valid from Open until Device.Close, and Bytes is one stable
// mapping for that whole time. Writing outside a frame you own corrupts
// traffic. Frame and Writable never panic: they return nil for a descriptor
// outside the region, and the slices they return have their capacity clipped
// to their length, so an append never spills into a neighbouring frame.
type Region interface {
	// Bytes returns the whole mapping. It aliases the memory; it is not a
	// copy.
	Bytes() []byte
	// Frame returns the d.Len bytes at d.Addr, or nil when they are not
	// inside the region. It checks the region's bounds, not the frame's:
	// Transmit is where a descriptor crossing a frame end is refused.
	Frame(d Desc) []byte
	// Writable returns the bytes from d.Addr to the end of the frame that
	// contains d.Addr, ignoring d.Len, or nil when d.Addr is outside the
	// region. Build a packet of unknown length in it, then set d.Len.
	Writable(d Desc) []byte
	// FrameSize is the size of one frame in bytes, a power of two.
	FrameSize() int
	// NumFrames is the number of frames in the region.
	NumFrames() int
}
