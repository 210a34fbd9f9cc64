package netstack

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
)

// gonet flattens the stack's errors into strings; errnos maps them back to
// what the standard library's net package returns for the same condition.
var errnos = map[string]error{}

func init() {
	for _, m := range []struct {
		e     tcpip.Error
		errno error
	}{
		{&tcpip.ErrConnectionReset{}, syscall.ECONNRESET},
		{&tcpip.ErrConnectionRefused{}, syscall.ECONNREFUSED},
		{&tcpip.ErrConnectionAborted{}, syscall.ECONNABORTED},
		{&tcpip.ErrAborted{}, syscall.ECONNABORTED},
		{&tcpip.ErrTimeout{}, syscall.ETIMEDOUT},
		{&tcpip.ErrNetworkUnreachable{}, syscall.ENETUNREACH},
		{&tcpip.ErrHostUnreachable{}, syscall.EHOSTUNREACH},
		{&tcpip.ErrHostDown{}, syscall.EHOSTDOWN},
		{&tcpip.ErrPortInUse{}, syscall.EADDRINUSE},
		{&tcpip.ErrBadLocalAddress{}, syscall.EADDRNOTAVAIL},
		{&tcpip.ErrClosedForSend{}, syscall.EPIPE},
		{&tcpip.ErrMessageTooLong{}, syscall.EMSGSIZE},
		{&tcpip.ErrNoBufferSpace{}, syscall.ENOBUFS},
		{&tcpip.ErrNotConnected{}, syscall.ENOTCONN},
		{&tcpip.ErrDestinationRequired{}, syscall.EDESTADDRREQ},
		{&tcpip.ErrAddressFamilyNotSupported{}, syscall.EAFNOSUPPORT},
		{&tcpip.ErrInvalidEndpointState{}, syscall.EINVAL},
		{&tcpip.ErrWouldBlock{}, syscall.EAGAIN},
	} {
		errnos[m.e.String()] = m.errno
	}
}

// mapErr turns an error from gonet into the one the net package would
// return: net.ErrClosed once the socket or the stack is closed,
// os.ErrDeadlineExceeded for a deadline, a syscall.Errno for the rest, all
// inside a *net.OpError.
func (st *Stack) mapErr(op, network string, err error, closed bool) error {
	if err == nil || err == io.EOF && !closed && !st.isClosing() {
		return err
	}
	oe, ok := err.(*net.OpError)
	if !ok {
		oe = &net.OpError{Op: op, Net: network, Err: err}
	} else {
		c := *oe
		oe = &c
	}
	switch {
	case closed || st.isClosing():
		oe.Err = net.ErrClosed
	case isTimeout(oe.Err):
		oe.Err = os.ErrDeadlineExceeded
	default:
		if errno, ok := errnos[oe.Err.Error()]; ok {
			oe.Err = errno
		}
	}
	return oe
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// listener is a TCP listener whose errors match the net package's.
type listener struct {
	*gonet.TCPListener
	st      *Stack
	network string
	closed  atomic.Bool
}

// Accept waits for the next connection. After Close it returns an error
// wrapping net.ErrClosed.
func (l *listener) Accept() (net.Conn, error) {
	if l.closed.Load() {
		return nil, &net.OpError{Op: "accept", Net: l.network, Addr: l.Addr(), Err: net.ErrClosed}
	}
	c, err := l.TCPListener.Accept()
	if err != nil {
		return nil, l.st.mapErr("accept", l.network, err, l.closed.Load())
	}
	return &tcpConn{TCPConn: c.(*gonet.TCPConn), st: l.st}, nil
}

// Close stops listening. A second Close returns net.ErrClosed.
func (l *listener) Close() error {
	if l.closed.Swap(true) {
		return &net.OpError{Op: "close", Net: l.network, Addr: l.Addr(), Err: net.ErrClosed}
	}
	return l.TCPListener.Close()
}

// tcpConn is a TCP connection whose errors match the net package's.
type tcpConn struct {
	*gonet.TCPConn
	st     *Stack
	closed atomic.Bool
}

func (c *tcpConn) err(op string, err error) error {
	return c.st.mapErr(op, "tcp", err, c.closed.Load())
}

func (c *tcpConn) closedErr(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: net.ErrClosed}
}

// Read reads data from the connection.
func (c *tcpConn) Read(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, c.closedErr("read")
	}
	n, err := c.TCPConn.Read(b)
	return n, c.err("read", err)
}

// Write writes data to the connection.
func (c *tcpConn) Write(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, c.closedErr("write")
	}
	n, err := c.TCPConn.Write(b)
	return n, c.err("write", err)
}

// Close closes the connection. A second Close returns net.ErrClosed.
func (c *tcpConn) Close() error {
	if c.closed.Swap(true) {
		return c.closedErr("close")
	}
	return c.TCPConn.Close()
}

// CloseWrite shuts down the sending side (sends FIN).
func (c *tcpConn) CloseWrite() error {
	if c.closed.Load() {
		return c.closedErr("close")
	}
	return c.err("close", c.TCPConn.CloseWrite())
}

// CloseRead shuts down the receiving side.
func (c *tcpConn) CloseRead() error {
	if c.closed.Load() {
		return c.closedErr("close")
	}
	return c.err("close", c.TCPConn.CloseRead())
}

// SetDeadline sets the read and write deadlines.
func (c *tcpConn) SetDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.closedErr("set deadline")
	}
	return c.TCPConn.SetDeadline(t)
}

// SetReadDeadline sets the read deadline.
func (c *tcpConn) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.closedErr("set deadline")
	}
	return c.TCPConn.SetReadDeadline(t)
}

// SetWriteDeadline sets the write deadline.
func (c *tcpConn) SetWriteDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.closedErr("set deadline")
	}
	return c.TCPConn.SetWriteDeadline(t)
}

// udpConn is a UDP socket whose errors match the net package's. It is a
// net.PacketConn and, when connected, a net.Conn.
type udpConn struct {
	*gonet.UDPConn
	st     *Stack
	closed atomic.Bool
}

var (
	_ net.Conn       = (*udpConn)(nil)
	_ net.PacketConn = (*udpConn)(nil)
)

func (c *udpConn) err(op string, err error) error {
	return c.st.mapErr(op, "udp", err, c.closed.Load())
}

func (c *udpConn) closedErr(op string) error {
	return &net.OpError{Op: op, Net: "udp", Source: c.LocalAddr(), Err: net.ErrClosed}
}

// Read reads one datagram from the connected peer.
func (c *udpConn) Read(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, c.closedErr("read")
	}
	n, err := c.UDPConn.Read(b)
	return n, c.err("read", err)
}

// ReadFrom reads one datagram and says who sent it.
func (c *udpConn) ReadFrom(b []byte) (int, net.Addr, error) {
	if c.closed.Load() {
		return 0, nil, c.closedErr("read")
	}
	n, addr, err := c.UDPConn.ReadFrom(b)
	return n, addr, c.err("read", err)
}

// Write sends one datagram to the connected peer.
func (c *udpConn) Write(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, c.closedErr("write")
	}
	n, err := c.UDPConn.Write(b)
	return n, c.err("write", err)
}

// WriteTo sends one datagram to addr.
func (c *udpConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.closed.Load() {
		return 0, c.closedErr("write")
	}
	n, err := c.UDPConn.WriteTo(b, addr)
	return n, c.err("write", err)
}

// Close closes the socket. A second Close returns net.ErrClosed.
func (c *udpConn) Close() error {
	if c.closed.Swap(true) {
		return c.closedErr("close")
	}
	return c.UDPConn.Close()
}

// SetDeadline sets the read and write deadlines.
func (c *udpConn) SetDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.closedErr("set deadline")
	}
	return c.UDPConn.SetDeadline(t)
}

// SetReadDeadline sets the read deadline.
func (c *udpConn) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.closedErr("set deadline")
	}
	return c.UDPConn.SetReadDeadline(t)
}

// SetWriteDeadline sets the write deadline.
func (c *udpConn) SetWriteDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.closedErr("set deadline")
	}
	return c.UDPConn.SetWriteDeadline(t)
}
