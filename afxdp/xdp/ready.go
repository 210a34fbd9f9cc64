package xdp

// WakeFD is the eventfd that Close, CloseRx and a latched failure write to
// wake Poll; it stays readable once written. It belongs to the socket and is
// closed by Close: poll it, never read, write or close it. -1 once Close
// has begun.
func (s *Socket) WakeFD() int {
	if !s.enter() {
		return -1
	}
	defer s.exit()
	return s.efd
}
