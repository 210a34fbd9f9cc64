// Package metrics measures what a packet loop costs the whole machine: CPU
// time from /proc/stat, split into user, system and soft-interrupt time. The
// soft-interrupt share matters: AF_PACKET and AF_XDP do part of their work in
// the kernel's softirq, outside the program, and counting only the program's
// own time would hide it.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime is cumulative CPU time of the whole machine, in clock ticks.
type CPUTime struct {
	User    uint64 // user + nice
	System  uint64
	SoftIRQ uint64
	IRQ     uint64
	Idle    uint64 // idle + iowait
	Steal   uint64
}

// Busy is the non-idle time.
func (c CPUTime) Busy() uint64 { return c.User + c.System + c.SoftIRQ + c.IRQ + c.Steal }

// Total is all time.
func (c CPUTime) Total() uint64 { return c.Busy() + c.Idle }

// Sub returns c - o, field by field.
func (c CPUTime) Sub(o CPUTime) CPUTime {
	return CPUTime{c.User - o.User, c.System - o.System, c.SoftIRQ - o.SoftIRQ, c.IRQ - o.IRQ, c.Idle - o.Idle, c.Steal - o.Steal}
}

// Sample is the machine's CPU time at one moment.
type Sample struct {
	When time.Time
	CPU  CPUTime
}

// ReadCPU samples /proc/stat.
func ReadCPU() (Sample, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return Sample{}, fmt.Errorf("metrics: %w", err)
	}
	defer f.Close()
	c, err := parseStat(f)
	return Sample{When: time.Now(), CPU: c}, err
}

// parseStat reads the aggregate "cpu" line of /proc/stat.
func parseStat(r io.Reader) (CPUTime, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || fields[0] != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(fields[i+1], 10, 64)
			if err != nil {
				return CPUTime{}, fmt.Errorf("metrics: /proc/stat field %d: %w", i+1, err)
			}
			v[i] = n
		}
		// user nice system idle iowait irq softirq steal
		return CPUTime{User: v[0] + v[1], System: v[2], Idle: v[3] + v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]}, nil
	}
	return CPUTime{}, fmt.Errorf("metrics: no aggregate cpu line in /proc/stat")
}

// Usage is CPU use over an interval, in cores (1.0 = one CPU busy for the
// whole interval).
type Usage struct {
	Cores, User, System, SoftIRQ float64
}

// Between is the usage from a to b.
func Between(a, b Sample) Usage {
	secs := b.When.Sub(a.When).Seconds()
	if secs <= 0 {
		return Usage{}
	}
	d := b.CPU.Sub(a.CPU)
	per := func(ticks uint64) float64 { return float64(ticks) / clockTicks / secs }
	return Usage{Cores: per(d.Busy()), User: per(d.User), System: per(d.System + d.IRQ + d.Steal), SoftIRQ: per(d.SoftIRQ)}
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux ABI.
const clockTicks = 100

// String renders usage as "1.23 cores (0.40 softirq)".
func (u Usage) String() string {
	return fmt.Sprintf("%.2f cores (%.2f softirq)", u.Cores, u.SoftIRQ)
}
