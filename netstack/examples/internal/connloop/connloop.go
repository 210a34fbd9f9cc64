// Package connloop holds what the netstack examples' servers share: a loop
// that hands each accepted connection to a handler and closes the ones
// still open when the listener closes, and an endless source of zeros.
package connloop

import (
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
