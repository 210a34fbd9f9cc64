package ring

import "encoding/binary"

func putNative64(b []byte, v uint64) { binary.NativeEndian.PutUint64(b, v) }
