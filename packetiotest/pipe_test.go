package packetiotest_test

import "testing"

// TestExampleConformance runs the example's conformance test, so the code
// the package documentation shows is the code that passes.
func TestExampleConformance(t *testing.T) { testConformance(t) }
