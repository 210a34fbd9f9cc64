// Package libxdp speaks libxdp's multi-program dispatcher protocol (the one
// xdp-tools' xdp-loader and every libxdp user follow), so a packetio
// program can share an interface's XDP hook with programs other tools put
// there, and they with it.
//
// # The protocol
//
// A dispatcher is an XDP program named "xdp_dispatcher" whose main function
// calls up to ten global stub functions prog0..prog9 in turn. Each
// component program is loaded as a BPF extension (freplace) of one stub:
// while stub i runs a component, its verdict either ends the chain (the
// dispatcher returns it) or, when its bit is set in the slot's chain-call
// bitmap, lets the next slot run; after the last enabled slot the
// dispatcher returns XDP_PASS. One read-only, frozen array map holds the
// configuration (struct xdp_dispatcher_config, version 2, 124 bytes: magic
// 236, version, number of enabled slots, frags flag, then per slot the
// chain-call bitmap, the run priority and the program flags). The verifier
// reads it as constants, so the slots a dispatcher does not use are dead
// code. When exactly one component is attached, libxdp (1.3.1 included)
// replaces the dispatcher's main function xdp_dispatcher rather than
// prog0; this package does the same, and it reads either form.
//
// A dispatcher is never changed in place: adding or removing a component
// builds a new dispatcher holding the new set, links every component into
// it (a loaded extension can be linked into a second target since Linux
// 5.10), pins it, then swaps it onto the hook atomically with the netlink
// XDP_FLAGS_REPLACE operation, expecting the old dispatcher. If the hook
// changed meanwhile the new one is dismantled and the whole operation
// starts over, a bounded number of times.
//
// Components are ordered by run priority (lower first), then by program
// name, then already-attached before new, then by tag and load time, as
// libxdp's cmp_xdp_programs orders them. Priority, chain actions and frags
// support of an attached component come from the dispatcher's
// configuration map, never from the component's own BTF. The dispatcher
// carries BPF_F_XDP_HAS_FRAGS (and is_xdp_frags = 1) only when every
// component supports frags.
//
// # State in bpffs
//
// The freplace links live only as long as something holds them, so each
// is pinned in bpffs: <top>/xdp/dispatch-IFINDEX-DID/progN-link and
// progN-prog (the component program itself), where top is Options.BPFFS,
// else $LIBXDP_BPFFS, else /sys/fs/bpf, and must be a mounted bpffs
// (ErrNoBPFFS otherwise), and DID is the dispatcher's program id. Every
// sequence that reads or writes pins holds an exclusive flock on
// <top>/xdp, the lock libxdp takes. A dispatcher whose directory is
// missing cannot be rebuilt (its components are unknown) and is refused,
// as is any other program on the hook, a version 1 dispatcher and a newer
// one: those errors wrap ErrNotShared and name the program id, name and
// why. An eleventh component is refused with ErrFull.
//
// # Kernels without freplace
//
// Some kernels refuse BPF_PROG_TYPE_EXT programs outright (the 6.18 PVM
// guest this package was written on answers EPERM, and libxdp there falls
// back to attaching a single program without a dispatcher). Add then fails
// with an error wrapping ErrNoFreplace and leaves the hook and bpffs as
// they were, so the caller can attach its program on its own.
//
// Every step of Add and Remove rolls back on failure: no program, link,
// pin or directory of a failed attempt stays behind, and the dispatcher
// that was on the hook stays exactly as it was. The package keeps no
// state of its own between calls.
package libxdp
