//go:build linux && race

package main

// shortBytes is the size of TestSoakShort's echoes. Under the race
// detector the stack runs several times slower, so CI's race run echoes
// 16 MiB, still more than the two 4 MiB receive buffers and the window
// they advertise together, which is what the stall needed; the other runs
// echo 64 MiB.
const shortBytes = 16 << 20
