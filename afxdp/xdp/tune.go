package xdp

// hostTuning is every host setting a fleet changed, and how to put it back.
type hostTuning struct {
	applied []string
}

// tune applies the host settings the mode calls for.
func (f *Fleet) tune(c *config, grp bindGroup) error { return nil }

func (t *hostTuning) changes() []string { return append([]string(nil), t.applied...) }

func (t *hostTuning) affinityDesc() string { return "" }

// restore undoes every change in reverse order, all of them attempted.
func (t *hostTuning) restore() error { return nil }
