package testenv

import "sync"

// Loops runs steps on goroutines of their own, each over and over until
// Stop: the load of a test that closes or reads something while calls are
// in progress. Its zero value is ready; call Go and Stop from one
// goroutine.
type Loops struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

// Go starts a goroutine that calls step until Stop.
func (l *Loops) Go(step func()) {
	if l.stop == nil {
		l.stop = make(chan struct{})
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			step()
		}
	}()
}

// Stop ends every loop and returns once each has left its step. A second
// Stop does nothing.
func (l *Loops) Stop() {
	if l.stop != nil {
		select {
		case <-l.stop:
		default:
			close(l.stop)
		}
	}
	l.wg.Wait()
}
