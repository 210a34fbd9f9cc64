// Package connloop holds what the netstack examples' servers share: a loop
// that hands each accepted connection to a handler and closes the ones
// still open when the listener closes, an endless source of zeros, and the
// reads and writes of a measurement, each asking for a whole buffer.
package connloop

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Serve accepts connections from l until it closes, runs handle on each in a
// goroutine of its own (closing the connection when handle returns), then
// closes the connections still open and waits for their handlers. The client
// has finished or given up by the time l closes, and a handler blocked on a
// stalled connection would otherwise keep the caller waiting for ever.
func Serve(l net.Listener, handle func(net.Conn)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	live := map[net.Conn]bool{}
	defer func() {
		mu.Lock()
		for c := range live {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		live[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mu.Lock()
				delete(live, c)
				mu.Unlock()
				c.Close()
			}()
			handle(c)
		}()
	}
}

// Zeros reads as an endless run of zero bytes.
type Zeros struct{}

// Read fills b with zeros.
func (Zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// Drain reads r to its end, asking for len(buf) bytes in every read, and
// returns how many bytes it read and the first error other than io.EOF
// (io.ErrShortBuffer for an empty buf, which could never reach the end).
//
// io.CopyBuffer(io.Discard, r, buf) does not do this: io.Discard's ReadFrom
// takes over and reads 8 KiB at a time whatever buf is, so a receiver
// measured through it pays a system call (or a trip into the stack) per
// 8 KiB.
func Drain(r io.Reader, buf []byte) (int64, error) {
	if len(buf) == 0 {
		return 0, io.ErrShortBuffer
	}
	var total int64
	for {
		n, err := r.Read(buf)
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// WriteN writes n bytes to w, taking them from block over and over in
// writes of len(block) bytes (the last one shorter), and returns how many
// bytes w took (io.ErrShortBuffer for an empty block and n above 0). block
// is only read, so clients may share one. Unlike io.Copy, which hands a
// *net.TCPConn's ReadFrom a 32 KiB copy loop, every write is as large as
// the caller chose.
func WriteN(w io.Writer, block []byte, n int64) (int64, error) {
	if len(block) == 0 && n > 0 {
		return 0, io.ErrShortBuffer
	}
	var total int64
	for total < n {
		m, err := w.Write(block[:min(n-total, int64(len(block)))])
		total += int64(m)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Echo writes back to rw everything it reads from it, asking for len(buf)
// bytes in every read, until the end of the input; it returns how many
// bytes it wrote and the first error other than io.EOF (io.ErrShortBuffer
// for an empty buf). Unlike io.Copy on a *net.TCPConn, which splices
// through a pipe, the kernel's TCP and the stack's do the same reads and
// writes.
func Echo(rw io.ReadWriter, buf []byte) (int64, error) {
	if len(buf) == 0 {
		return 0, io.ErrShortBuffer
	}
	var total int64
	for {
		n, err := rw.Read(buf)
		if n > 0 {
			m, werr := rw.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
