//go:build linux && (race || packetio_checked)

package main

// manyTestBytes is what each of TestMany1000's connections moves. Under
// the race detector the stack runs about ten times slower, the receive
// ring overflows for longer, and the kernel's senders back off their
// retransmission timers past the test's time (22 of 1,000 1 MiB sinks
// timed out after 2 minutes): the 1,000 connections stay, each moves less.
// The checked build (ownership checked on every frame) is slower too: one
// of 1,000 1 MiB sinks timed out there in a clean-clone make test.
const manyTestBytes = 64 << 10
