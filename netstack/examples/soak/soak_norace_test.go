//go:build linux && !race

package main

// shortBytes is the size of TestSoakShort's echoes (see soak_race_test.go).
const shortBytes = 64 << 20
