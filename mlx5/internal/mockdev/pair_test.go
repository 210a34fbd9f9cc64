package mockdev

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
)

// A Pair whose second device fails to open closes the first one again
// instead of leaking it: its queues report ErrClosed.
func TestPairClosesTheFirstWhenTheSecondFails(t *testing.T) {
	var opened []*Device
	calls := 0
	injected := errors.New("injected")
	open := func(cfg Config) (*Device, error) {
		calls++
		if calls == 2 {
			return nil, injected
		}
		d, err := Open(cfg)
		if err == nil {
			opened = append(opened, d)
		}
		return d, err
	}
	a, b, err := pair(Config{}, Config{}, open)
	if !errors.Is(err, injected) || a != nil || b != nil {
		t.Fatalf("pair = %v, %v, %v; want nil, nil and the second Open's error", a, b, err)
	}
	if len(opened) != 1 {
		t.Fatalf("%d devices opened, want 1", len(opened))
	}
	if err := opened[0].TxQueue(0).Err(); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("the first device's tx Err after the failed Pair: %v, want ErrClosed (the device leaked)", err)
	}
	if err := opened[0].RxQueue(0).Err(); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("the first device's rx Err after the failed Pair: %v, want ErrClosed (the device leaked)", err)
	}
}
