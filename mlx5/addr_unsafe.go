//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import "unsafe"

// uintptrOf is the address of the first byte of mem: the device address of
// region offset 0 (mem is an mmap, never moved by the Go runtime).
func uintptrOf(mem []byte) uintptr { return uintptr(unsafe.Pointer(&mem[0])) }
