//go:build linux && !race && !packetio_checked

package main

// manyTestBytes is what each of TestMany1000's connections moves: issue
// 20's 1 MiB.
const manyTestBytes = 1 << 20
