package ring

import (
	"strings"
	"testing"
)

// The three deliberate breakages. Each switches on one test-only fault in the
// ring and asserts that the suite's own scenarios catch it, and that the same
// scenarios pass with the fault off. A suite that stays green with a broken
// ring proves nothing; these prove it goes red.

func expectCaught(t *testing.T, fault faults, want string, scenarios map[string]func(testing.TB, faults)) {
	t.Helper()
	for name, s := range scenarios {
		if failed, msgs := caught(func(tb testing.TB) { s(tb, faults{}) }); failed {
			t.Fatalf("%s fails without the fault: %q", name, msgs)
		}
		failed, msgs := caught(func(tb testing.TB) { s(tb, fault) })
		if !failed {
			t.Errorf("%s did not catch the fault", name)
			continue
		}
		if !strings.Contains(strings.Join(msgs, "\n"), want) {
			t.Errorf("%s failed, but not for the reason expected (%q): %q", name, want, msgs)
		}
	}
}

// (a) The doorbell index published in native byte order: the model reads a
// value above 16 bits and reports a byte swap.
func TestBreakageDoorbellByteOrder(t *testing.T) {
	expectCaught(t, faults{swapDoorbell: true}, "byte-swapped", map[string]func(testing.TB, faults){
		"tx post/complete": txPostComplete,
		"tx laps":          txLaps,
		"rx fill/receive":  rxFillReceive,
		"rx laps":          rxLaps,
	})
}

// (b) One frame released past the last completed one: the rig sees a frame
// handed back before the model finished with it.
func TestBreakageReleaseOneTooFar(t *testing.T) {
	expectCaught(t, faults{releaseOneMore: true}, "before the device finished", map[string]func(testing.TB, faults){
		"tx randomized": txRandomized,
	})
}

// (c) A completion believed although it names the wrong buffer: the forged
// completion tests see frames released (send) or handed out (receive).
func TestBreakageTrustTheWrongBuffer(t *testing.T) {
	expectCaught(t, faults{trustCounter: true}, "", map[string]func(testing.TB, faults){
		"tx forged completions": txForgedCompletions,
		"rx wrong buffer":       rxWrongBuffer,
	})
}
