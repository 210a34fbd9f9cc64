package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	in := "cpu  100 5 200 1000 50 7 30 2 0 0\ncpu0 50 2 100 500 25 3 15 1 0 0\nintr 1 2 3\n"
	got, err := parseStat(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTime{User: 105, System: 200, Idle: 1050, IRQ: 7, SoftIRQ: 30, Steal: 2}
	if got != want {
		t.Fatalf("parseStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := parseStat(strings.NewReader(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestBetween(t *testing.T) {
	t0 := time.Unix(0, 0)
	a := Sample{When: t0, CPU: CPUTime{User: 100, System: 100, SoftIRQ: 0, Idle: 1000}}
	b := Sample{When: t0.Add(2 * time.Second), CPU: CPUTime{User: 200, System: 150, SoftIRQ: 50, Idle: 1200}}
	u := Between(a, b)
	// 100+50+50 busy ticks over 2 s at 100 ticks/s = 1 core.
	if u.Cores != 1 || u.User != 0.5 || u.SoftIRQ != 0.25 || u.System != 0.25 {
		t.Fatalf("Between = %+v", u)
	}
	if got := u.String(); got != "1.00 cores (0.25 softirq)" {
		t.Fatalf("String = %q", got)
	}
	if (Between(b, b) != Usage{}) {
		t.Fatal("zero interval gave usage")
	}
}

func TestReadCPUOnThisMachine(t *testing.T) {
	a, err := ReadCPU()
	if err != nil {
		t.Fatal(err)
	}
	if a.CPU.Total() == 0 {
		t.Fatal("no CPU time at all")
	}
}

func TestReporterLine(t *testing.T) {
	var buf bytes.Buffer
	r, err := NewReporter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rate, _, err := r.Line(1000, "  extra")
	if err != nil || rate <= 0 {
		t.Fatalf("Line = %v, %v", rate, err)
	}
	if !strings.Contains(buf.String(), "Mpps") || !strings.HasSuffix(buf.String(), "  extra\n") {
		t.Fatalf("line %q", buf.String())
	}
}

func TestLimiter(t *testing.T) {
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	l := &Limiter{Every: time.Hour}
	for i := 0; i < 5; i++ {
		l.Log(logf, errors.New("boom"))
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines logged", len(lines))
	}
	l.last = time.Now().Add(-2 * time.Hour)
	l.Log(logf, errors.New("boom"))
	if len(lines) != 2 || !strings.Contains(lines[1], "4 more") {
		t.Fatalf("lines %q", lines)
	}
}

func TestEveryPrintsUntilCancelled(t *testing.T) {
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 130*time.Millisecond)
	defer cancel()
	n := uint64(0)
	if err := Every(ctx, &buf, 20*time.Millisecond, func() (uint64, string) { n += 100; return n, " x" }); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), " x\n"); lines < 2 {
		t.Fatalf("%d lines in 130ms at 20ms:\n%s", lines, buf.String())
	}
}
