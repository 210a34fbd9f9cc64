// Command packetio is the operator's tool for what packetio leaves on a
// host.
//
//	go run ./cmd/packetio restore [-dir /run/packetio] [-n]
//
// restore puts back the host settings (NAPI deferral, interrupt affinity,
// driver private flags) that processes killed while tuned left changed. A
// tuned Open does the same by itself before it changes anything; restore is
// for a host where no Open comes next. It reads the journal files under
// DIR/journal/ (one per tuning process, see internal/host.Recover) and, for
// every process that no longer runs, writes back each recorded original
// where the setting still holds the value that process wrote. It prints
// one line per setting: restored, already back, left because someone
// changed it since, dropped because its namespace or interface is gone,
// held by a live process, or failed. -n only lists what would be done. The
// exit status is 1 when anything failed, 2 for bad usage.
package main
