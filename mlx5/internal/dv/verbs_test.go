//go:build linux && cgo && mlx5 && (amd64 || arm64)

package dv

import (
	"errors"
	"os"
	"testing"

	"github.com/packetio/packetio"
)

// Through the real libibverbs: a verbs device that is not there is a clean
// error, not a crash.
func TestOpenMissingVerbsDevice(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband/mlx5_99"); err == nil {
		t.Skip("this machine really has mlx5_99")
	}
	d, err := Open(Port{IBDev: "mlx5_99", Port: 1})
	if err == nil {
		d.Close()
		t.Fatal("opened a verbs device that does not exist")
	}
	if !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("%v does not wrap ErrUnsupported", err)
	}
	t.Log(err)
}
