package libxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Protocol constants (xdp-tools' prog_dispatcher.h).
const (
	// MaxComponents is how many components one dispatcher holds.
	MaxComponents = 10
	// DefaultPriority is the run priority of a component that asks for
	// none, libxdp's XDP_DEFAULT_RUN_PRIO.
	DefaultPriority = 50

	dispatcherMagic   = 236
	dispatcherVersion = 2
	// dispatcherRetval is what an empty stub returns; its bit is always in
	// a slot's chain-call bitmap, so a slot whose component went away lets
	// the chain go on.
	dispatcherRetval = 31
	configSize       = 4 + 3*4*MaxComponents // 124
	// fragsFlag is BPF_F_XDP_HAS_FRAGS as the config's program_flags
	// records it.
	fragsFlag = 1 << 5

	xdpPass = 2
)

// config is struct xdp_dispatcher_config, version 2.
type config struct {
	NumProgs     uint8
	Frags        bool
	ChainActions [MaxComponents]uint32
	RunPrios     [MaxComponents]uint32
	ProgFlags    [MaxComponents]uint32
}

// marshal lays the config out as the kernel map value, in host byte order
// as the C struct is.
func (c *config) marshal() []byte {
	b := make([]byte, 4, configSize)
	b[0], b[1], b[2] = dispatcherMagic, dispatcherVersion, c.NumProgs
	if c.Frags {
		b[3] = 1
	}
	for _, arr := range [...]*[MaxComponents]uint32{&c.ChainActions, &c.RunPrios, &c.ProgFlags} {
		for _, v := range arr {
			b = binary.NativeEndian.AppendUint32(b, v)
		}
	}
	return b
}

// errNoMagic marks a map value without the magic byte: a version 1
// dispatcher, or no dispatcher at all.
var errNoMagic = errors.New("no dispatcher magic in the config")

// valueVersion reads the dispatcher version from a config map value, the
// way libxdp does when the magic byte is there.
func valueVersion(v []byte) (int, error) {
	if len(v) < 2 {
		return 0, fmt.Errorf("config value of %d bytes, want at least 2", len(v))
	}
	if v[0] != dispatcherMagic {
		return 0, errNoMagic
	}
	return int(v[1]), nil
}

// parseConfig decodes a version 2 config map value. It refuses anything
// libxdp 1.3.1 would not rebuild: no magic, another version, another size,
// more enabled slots than there are, a frags byte other than 0 or 1.
func parseConfig(v []byte) (config, error) {
	var c config
	ver, err := valueVersion(v)
	if err != nil {
		return c, err
	}
	if ver != dispatcherVersion {
		return c, fmt.Errorf("dispatcher version %d, want %d", ver, dispatcherVersion)
	}
	if len(v) != configSize {
		return c, fmt.Errorf("version %d config of %d bytes, want %d", ver, len(v), configSize)
	}
	if v[2] > MaxComponents {
		return c, fmt.Errorf("config enables %d slots, at most %d exist", v[2], MaxComponents)
	}
	if v[3] > 1 {
		return c, fmt.Errorf("config frags byte %d, want 0 or 1", v[3])
	}
	c.NumProgs, c.Frags = v[2], v[3] == 1
	off := 4
	for _, arr := range [...]*[MaxComponents]uint32{&c.ChainActions, &c.RunPrios, &c.ProgFlags} {
		for i := range arr {
			arr[i] = binary.NativeEndian.Uint32(v[off:])
			off += 4
		}
	}
	return c, nil
}
