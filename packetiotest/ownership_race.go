//go:build race

package packetiotest

// raceEnabled: the race detector slows every step about 30 times, so
// RunOwnership runs a tenth of the steps asked for.
const raceEnabled = true
