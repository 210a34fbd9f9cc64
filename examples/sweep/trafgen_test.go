package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

// TestTrafgenConfigOutlivesStart: the trafgen column's config file stays
// until the cell stops, so a trafgen slow to start (a loaded machine)
// still finds it. The stand-in trafgen here reads it 600 ms after it
// starts and exits 1 when it is gone, as trafgen does ("Cannot access
// ...frame.cfg"); startTool used to remove it as soon as it returned.
func TestTrafgenConfigOutlivesStart(t *testing.T) {
	testenv.NeedRoot(t)
	if _, err := exec.LookPath("nsenter"); err != nil {
		testenv.CannotRun(t, "nsenter is not installed")
		return
	}
	bin := t.TempDir()
	script := "#!/bin/sh\nsleep 0.6\nfor a in \"$@\"; do case $prev in --conf) test -r \"$a\" || { echo \"Cannot access $a\"; exit 1; };; esac; prev=$a; done\nexec sleep 30\n"
	if err := os.WriteFile(filepath.Join(bin, "trafgen"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	before := hostNow(t)
	e := &env{feeder: feederLive, size: 60, flows: 8, batch: 64, cpus: allowedCPUs(), log: io.Discard}
	defer func() {
		if err := e.close(); err != nil {
			t.Error(err)
		}
		checkClean(t, before)
	}()
	r, err := e.rig(1, false)
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.startTool(context.Background(), r, colTrafgen, loopTx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	_, cerr := run.count()
	if err := run.stop(); err != nil {
		t.Logf("stop: %v", err)
	}
	if cerr != nil {
		t.Fatalf("trafgen did not find its config: %v", cerr)
	}
}
