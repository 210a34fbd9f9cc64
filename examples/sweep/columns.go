package main

import (
	"slices"
	"strings"
)

// The columns. A packetio backend gives one or two (afxdp with and
// without busy-polling; dpdk over DPDK's af_packet and af_xdp drivers);
// the others are references: the kernel's own sockets (the baseline of
// every ratio ×kernel) and the tools a C programmer would measure with.
const (
	colKernel        = "kernel"
	colAfpacket      = "afpacket"
	colAfxdp         = "afxdp"
	colAfxdpBusy     = "afxdp+busypoll"
	colDpdkPacket    = "dpdk/af_packet"
	colDpdkXDP       = "dpdk/af_xdp"
	colCxsk          = "C xsk"
	colCxskBusy      = "C xsk+busypoll"
	colTestpmdPacket = "testpmd/af_packet"
	colTestpmdXDP    = "testpmd/af_xdp"
	colTrafgen       = "trafgen"
	colNetsniff      = "netsniff-ng"
	colTcpdump       = "tcpdump"
)

// columnOrder is the table's and the chart's order: the baseline, then
// each packetio column followed by its reference, so a pair is read (and
// drawn) side by side.
var columnOrder = []string{colKernel, colAfpacket, colTrafgen, colTcpdump, colNetsniff, colAfxdp, colCxsk, colAfxdpBusy, colCxskBusy,
	colDpdkPacket, colTestpmdPacket, colDpdkXDP, colTestpmdXDP}

// allColumns lists every column this sweep knows, in table order.
func allColumns() []string { return slices.Clone(columnOrder) }

// columnRank is c's place in columnOrder (unknown names last).
func columnRank(c string) int {
	if i := slices.Index(columnOrder, c); i >= 0 {
		return i
	}
	return len(columnOrder)
}

// backendOf is the packetio backend a column runs, "" for the baseline and
// the references.
func backendOf(column string) string {
	switch column {
	case colAfpacket:
		return "afpacket"
	case colAfxdp, colAfxdpBusy:
		return "afxdp"
	case colDpdkPacket, colDpdkXDP:
		return "dpdk"
	}
	return ""
}

// isReference reports whether column is a reference tool (not packetio,
// not the kernel baseline).
func isReference(column string) bool {
	switch column {
	case colCxsk, colCxskBusy, colTestpmdPacket, colTestpmdXDP, colTrafgen, colNetsniff, colTcpdump:
		return true
	}
	return false
}

// isTestpmd reports whether column is a testpmd column.
func isTestpmd(column string) bool { return column == colTestpmdPacket || column == colTestpmdXDP }

// isXsk reports whether column is the C AF_XDP reference.
func isXsk(column string) bool { return column == colCxsk || column == colCxskBusy }

// runsLoop reports whether column has a cell in loop: the tools do one
// thing each.
func runsLoop(column, loop string) bool {
	switch column {
	case colTrafgen:
		return loop == loopTx
	case colNetsniff, colTcpdump:
		return loop == loopRx
	}
	return true
}

// reference is the column a packetio column is held against in loop (its
// ×ref ratio), "" for none: afxdp against the C AF_XDP program, each with
// and without busy-polling; dpdk against testpmd on the same DPDK driver;
// afpacket against trafgen (transmit) and tcpdump (receive), packet-socket
// tools with mmap rings that count what they themselves moved (netsniff-ng
// cannot say what it took while it runs).
func reference(loop, column string) string {
	switch column {
	case colAfxdp:
		return colCxsk
	case colAfxdpBusy:
		return colCxskBusy
	case colDpdkPacket:
		return colTestpmdPacket
	case colDpdkXDP:
		return colTestpmdXDP
	case colAfpacket:
		switch loop {
		case loopTx:
			return colTrafgen
		case loopRx:
			return colTcpdump
		}
	}
	return ""
}

// family is the colour family of a column in the chart: a reference is
// drawn in its packetio column's colour, hatched.
func family(column string) string {
	switch column {
	case colTrafgen, colNetsniff, colTcpdump:
		return colAfpacket
	case colCxsk:
		return colAfxdp
	case colCxskBusy:
		return colAfxdpBusy
	case colTestpmdPacket:
		return colDpdkPacket
	case colTestpmdXDP:
		return colDpdkXDP
	}
	return column
}

// parseColumns checks a -columns list against the known names.
func parseColumns(list []string) ([]string, []string) {
	var ok, bad []string
	for _, c := range list {
		if slices.Contains(columnOrder, c) {
			ok = append(ok, c)
		} else {
			bad = append(bad, c)
		}
	}
	return ok, bad
}

// columnList is the known columns for a usage message.
func columnList() string { return strings.Join(columnOrder, ", ") }
