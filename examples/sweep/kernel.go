package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/examples/internal/testbed"
)

// The baseline: the same three loops on plain kernel UDP sockets in the
// measured namespace, moving batches with sendmmsg and recvmmsg, one socket
// per queue. Receive and relay sockets share a port with SO_REUSEPORT, so
// the kernel spreads the feeder's flows over them. Forward is a UDP relay:
// recvmmsg a batch, sendmmsg it on to the sink.

// mmsg is a batch of messages for sendmmsg or recvmmsg, over buffers of
// one size.
type mmsg struct {
	bufs [][]byte
	iov  []unix.Iovec
	hdrs []unix.Mmsghdr
	to   unix.RawSockaddrInet4
}

func newMmsg(n, size int) *mmsg {
	m := &mmsg{bufs: make([][]byte, n), iov: make([]unix.Iovec, n), hdrs: make([]unix.Mmsghdr, n)}
	for i := range m.bufs {
		m.bufs[i] = make([]byte, size)
		m.iov[i].Base = &m.bufs[i][0]
		m.iov[i].SetLen(size)
		m.hdrs[i].Hdr.Iov = &m.iov[i]
		m.hdrs[i].Hdr.SetIovlen(1)
	}
	return m
}

// address every message to ip:port.
func (m *mmsg) address(ip [4]byte, port uint16) {
	m.to = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ip}
	p := (*[2]byte)(unsafe.Pointer(&m.to.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	for i := range m.hdrs {
		m.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&m.to))
		m.hdrs[i].Hdr.Namelen = unix.SizeofSockaddrInet4
	}
}

// lengths sets the first n messages' lengths to what from received, or,
// with from nil, back to the buffer size.
func (m *mmsg) lengths(n int, from []unix.Mmsghdr) {
	for i := 0; i < n; i++ {
		if from == nil {
			m.iov[i].SetLen(len(m.bufs[i]))
		} else {
			m.iov[i].SetLen(int(from[i].Len))
		}
	}
}

func mmsgCall(trap uintptr, fd int, hdrs []unix.Mmsghdr, flags int) (int, error) {
	n, _, errno := unix.Syscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
	runtime.KeepAlive(hdrs)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

func sendmmsg(fd int, hdrs []unix.Mmsghdr) (int, error) {
	return mmsgCall(unix.SYS_SENDMMSG, fd, hdrs, 0)
}

// recvmmsg blocks for the first message (at most the socket's timeout) and
// then takes what is already there.
func recvmmsg(fd int, hdrs []unix.Mmsghdr) (int, error) {
	return mmsgCall(unix.SYS_RECVMMSG, fd, hdrs, unix.MSG_WAITFORONE)
}

// transient reports errors a socket loop waits out: a timeout, a full
// buffer, an ICMP error reported late, an interrupted call.
func transient(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOBUFS)
}

// udpSocket opens a UDP socket in the measured namespace, bound to port
// (0: any) on the measured side's address, with 50 ms timeouts so loops
// notice when to stop.
func (e *env) udpSocket(r *rig, port uint16) (int, error) {
	fd := -1
	err := r.bed.In(func() error {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		tv := unix.Timeval{Usec: 50000}
		for _, o := range []struct {
			name string
			set  func() error
		}{
			{"SO_REUSEPORT", func() error { return unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }},
			{"SO_RCVTIMEO", func() error { return unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) }},
			{"SO_SNDTIMEO", func() error { return unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv) }},
			{"SO_RCVBUF", func() error { return unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20) }},
			{"bind", func() error {
				return unix.Bind(s, &unix.SockaddrInet4{Addr: testbed.AddrA.Addr().As4(), Port: int(port)})
			}},
		} {
			if err := o.set(); err != nil {
				unix.Close(s)
				return fmt.Errorf("%s: %w", o.name, err)
			}
		}
		fd = s
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("kernel baseline socket: %w", err)
	}
	return fd, nil
}

// payload is the UDP payload that makes a frame of the cell's size.
func (e *env) payload() int { return max(e.size-14-20-8, 1) }

// startKernel starts the baseline loop with one socket per queue of r.
func (e *env) startKernel(ctx context.Context, r *rig, loop string) (running, error) {
	q := r.queues
	var fds []int
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	port := baselinePort
	if loop == loopTx {
		port = 0
	}
	for i := 0; i < q; i++ {
		fd, err := e.udpSocket(r, port)
		if err != nil {
			closeAll()
			return running{}, err
		}
		fds = append(fds, fd)
	}
	var total atomic.Uint64
	ctx, cancel := context.WithCancel(ctx)
	g := &group{cancel: cancel}
	sink := sinkIP.As4()
	for i, fd := range fds {
		cpu := e.workerCPU(i)
		switch loop {
		case loopTx:
			g.goQueue(ctx, i, cpu, func(ctx context.Context) error {
				m := newMmsg(e.batch, e.payload())
				m.address(sink, discardPort)
				for ctx.Err() == nil {
					n, err := sendmmsg(fd, m.hdrs)
					if err != nil && !transient(err) {
						return fmt.Errorf("sendmmsg: %w", err)
					}
					total.Add(uint64(n))
				}
				return nil
			})
		case loopRx:
			g.goQueue(ctx, i, cpu, func(ctx context.Context) error {
				m := newMmsg(e.batch, max(2048, e.size))
				want := uint32(e.payload())
				var right, wrong uint64
				for ctx.Err() == nil {
					n, err := recvmmsg(fd, m.hdrs)
					if err != nil && !transient(err) {
						return fmt.Errorf("recvmmsg: %w", err)
					}
					k := 0
					for j := 0; j < n; j++ {
						if m.hdrs[j].Len == want {
							k++
						}
					}
					right, wrong = right+uint64(k), wrong+uint64(n-k)
					total.Add(uint64(k))
				}
				if wrong*100 > right {
					return fmt.Errorf("%d datagrams of another length than %d bytes against %d of it: not the size this cell measures", wrong, want, right)
				}
				return nil
			})
		case loopFwd:
			g.goQueue(ctx, i, cpu, func(ctx context.Context) error {
				in := newMmsg(e.batch, max(2048, e.size))
				out := &mmsg{bufs: in.bufs, iov: in.iov, hdrs: make([]unix.Mmsghdr, e.batch)}
				for j := range out.hdrs {
					out.hdrs[j].Hdr.Iov = &in.iov[j]
					out.hdrs[j].Hdr.SetIovlen(1)
				}
				out.address(sink, discardPort)
				for ctx.Err() == nil {
					n, err := recvmmsg(fd, in.hdrs)
					if err != nil && !transient(err) {
						return fmt.Errorf("recvmmsg: %w", err)
					}
					if n == 0 {
						continue
					}
					in.lengths(n, in.hdrs)
					for sent := 0; sent < n && ctx.Err() == nil; {
						k, err := sendmmsg(fd, out.hdrs[sent:n])
						if err != nil && !transient(err) {
							return fmt.Errorf("sendmmsg: %w", err)
						}
						sent += k
						total.Add(uint64(k))
					}
					in.lengths(n, nil)
				}
				return nil
			})
		default:
			cancel()
			closeAll()
			return running{}, fmt.Errorf("unknown loop %q", loop)
		}
	}
	run := running{count: counter(&total), stop: func() error { err := g.wait(); closeAll(); return err }}
	if loop == loopTx {
		return run, nil
	}
	restore, err := e.takeFeed(r, nil)
	if err != nil {
		run.stop()
		return running{}, err
	}
	fd, err := r.feed.start(ctx, target{dstMAC: r.macA, dstIP: testbed.AddrA.Addr(), dstPort: baselinePort, size: e.size})
	if err != nil {
		run.stop()
		restore()
		return running{}, err
	}
	inner := run.stop
	run.offered, run.stop = fd.sent, func() error { ferr := fd.stop(); return errors.Join(ferr, inner(), restore()) }
	return run, nil
}
