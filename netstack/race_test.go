//go:build race

package netstack

// raceEnabled is true under the race detector, whose sync.Pool drops items
// at random, so allocation counts mean nothing there.
const raceEnabled = true
