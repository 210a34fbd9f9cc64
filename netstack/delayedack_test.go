package netstack

import (
	"io"
	"net"
	"testing"
	"time"
)

// rrPair connects a client on stack a to a server on stack b and returns
// both ends of the connection.
func rrPair(t *testing.T, a, b *Stack) (client, server net.Conn) {
	t.Helper()
	l, err := b.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err = a.Dial("tcp", "10.0.0.2:7")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// exchange sends a 64-byte request from client, has server read it and
// answer 64 bytes, and reads the answer.
func exchange(t *testing.T, client, server net.Conn) {
	t.Helper()
	var buf [64]byte
	if _, err := client.Write(buf[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(server, buf[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Write(buf[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, buf[:]); err != nil {
		t.Fatal(err)
	}
}

// A server answering requests at once sends one packet per request (the
// answer carries the ACK) instead of a bare ACK and the answer.
func TestDelayedAckRequestResponse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		min, max uint64 // server's packets per 100 requests
	}{
		{"default", 0, 100, 105},
		{"off", -1, 200, 205},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := stackPair(t, Config{AckDelay: tc.delay}, Config{AckDelay: tc.delay})
			client, server := rrPair(t, a, b)
			for range 10 {
				exchange(t, client, server)
			}
			before := b.Stats().TxPackets
			for range 100 {
				exchange(t, client, server)
			}
			// The client's ACK of the last answer may be held; the
			// server's count is complete once its answer is read.
			if n := b.Stats().TxPackets - before; n < tc.min || n > tc.max {
				t.Errorf("server sent %d packets for 100 requests, want %d to %d", n, tc.min, tc.max)
			}
		})
	}
}

// An ACK held for an answer that does not come leaves on its own after
// AckDelay, and the connection then acknowledges at once until it answers
// promptly again.
func TestDelayedAckExpires(t *testing.T) {
	const delay = 100 * time.Millisecond
	a, b := stackPair(t, Config{}, Config{AckDelay: delay})
	client, server := rrPair(t, a, b)
	for range 5 {
		exchange(t, client, server)
	}
	var buf [64]byte
	// request sends a request that the server reads but does not answer,
	// and returns how long the server's ACK took to leave, measured from
	// before the request was sent.
	request := func() time.Duration {
		t.Helper()
		before := b.Stats().TxPackets
		start := time.Now()
		if _, err := client.Write(buf[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(server, buf[:]); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the server's ACK", func() bool { return b.Stats().TxPackets != before })
		if n := b.Stats().TxPackets - before; n != 1 {
			t.Fatalf("server sent %d packets for a request it did not answer, want 1 (its ACK)", n)
		}
		return time.Since(start)
	}

	// The timer is armed after the request arrives, so a held ACK cannot
	// be seen earlier than AckDelay after the request was sent.
	if took := request(); took < delay {
		t.Fatalf("ACK of an answering connection's request left after %v, want it held %v", took, delay)
	}
	// No longer answering: the next request is acknowledged at once.
	if took := request(); took >= delay/2 {
		t.Fatalf("ACK of a request after a held ACK expired left after %v, want at once", took)
	}
	// Answering promptly makes it hold ACKs again.
	if _, err := server.Write(buf[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, buf[:]); err != nil {
		t.Fatal(err)
	}
	exchange(t, client, server)
	if took := request(); took < delay {
		t.Fatalf("ACK of a request after answering again left after %v, want it held %v", took, delay)
	}
}
