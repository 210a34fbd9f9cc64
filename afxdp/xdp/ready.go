package xdp

// WakeFD is the eventfd that Close, CloseRx and a latched failure write to
// wake Poll; it stays readable once written. It belongs to the socket and is
// closed by Close: poll it, never read, write or close it. -1 after Close.
func (s *Socket) WakeFD() int { return s.efd }
