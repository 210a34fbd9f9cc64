// Package host owns every change packetio makes to the host and its undo:
// the one door to SIOCETHTOOL (ethtool_unsafe.go), the sysfs and procfs
// settings, NAPI, interrupt placement, CPU affinity and worker pinning,
// and the Journal that puts each change back. Nothing here runs unless an
// option asks for it: a backend opened with default options changes
// nothing through this package.
//
// What it changes, when asked:
//
//   - NAPI deferral (TuneNAPI): napi_defer_hard_irqs and gro_flush_timeout
//     in /sys/class/net/<if>/, so the kernel lets packets accumulate
//     instead of waking the receiver on every poll.
//
//   - Interrupt routing (MoveIRQ): /proc/irq/<n>/smp_affinity_list, when a
//     queue's interrupt must be brought beside the worker the caller named.
//
//   - Driver private flags (SetPrivFlag): mlx5's xdp_tx_mpwqe, through the
//     SIOCETHTOOL ioctl.
//
//   - Worker placement (Placement.Pin): the CPU affinity of the calling
//     thread, not of the host.
//
//   - GRO and channel counts (SetGRO, SetChannels): only for tests and
//     examples, on veth pairs they made.
//
// What it only reads: channel counts and the driver (ReadChannels,
// Driver), snapshots of the tunables (TakeSnapshot), the per-queue interrupts of a device and where they
// land (FindIRQs), the NUMA node of a NIC and the online nodes (NICNode,
// OnlineNodes, for internal/numa), the CPU topology (ReadTopology), from which Plan decides
// where each queue's worker runs. Busy-poll is the socket's business, not
// this package's.
//
// # Restoring
//
// Every change goes through a Journal, one per fleet, which Restore unwinds
// newest first, attempting every step and joining the errors; a fleet whose
// Open fails halfway restores the same way. Settings are reference-counted
// across the process by (network namespace, filesystem root, interface,
// setting), so two fleets on one interface share a change and the last to
// close restores the original. Every change is also listed by
// Journal.Changes for Info.
//
// # Crashes
//
// A journal is kept on disk as well, one file per process:
// /run/packetio/journal/<pid>-<starttime>.json (Journal.RunDir changes
// the run directory), with the starttime of /proc/<pid>/stat so a reused
// PID is not taken for the owner. Before each write to the host the
// original is recorded there (temporary file, fsync, rename); the record
// goes when the original is written back, the file with the last record.
// A setting whose original cannot be recorded is not changed.
//
// Recover, which a tuned Open runs before it records any original (and
// `go run ./cmd/packetio restore [-dir /run/packetio] [-n]` runs by
// hand), reads every file whose owner is gone and writes back each
// original, newest first, where the setting still holds the value the
// owner wrote; a setting someone changed since is left and reported, one
// in a network namespace, interface or interrupt that no longer exists is
// dropped with a note. A live owner's file is never touched.
//
// # Namespaces
//
// Netlink-style work (ethtool ioctls, the netns identity of a setting)
// happens in the network namespace of the calling OS thread. sysfs is
// different: /sys shows the namespace of whoever mounted it, so a caller
// inside another namespace gets a matching view from InNetnsSysfs. Paths
// are always taken from a root argument (sysRoot, procRoot) so that tests
// can point them at a fake tree. The package is Linux only.
//
// Failures that only mean "this host cannot do that" (no such file,
// read-only sysfs, no permission, unknown driver) are *UnavailableError,
// matching ErrUnavailable, with a Reason meant for an Info line.
package host
