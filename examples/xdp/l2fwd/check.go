package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/packetio/packetio/examples/internal/bed"
)

// testEtherType marks the frames check sends (IEEE local experimental:
// nothing else on the pair uses it).
const testEtherType = 0x88b5

// checkResult is what the traffic check saw.
type checkResult struct{ sent, arrived int }

// check sends n frames each way between the far ends of the pairs (from
// the one far end to itself with one pair) and counts those that arrive
// byte for byte.
func check(ctx context.Context, far []bed.Port, n int, macswap bool, w io.Writer) (checkResult, error) {
	var res checkResult
	raws := make([]*bed.Raw, len(far))
	for i, p := range far {
		r, err := bed.OpenRaw(p)
		if err != nil {
			return res, err
		}
		defer r.Close()
		raws[i] = r
	}
	for dir := range len(far) {
		from, to := dir, (dir+1)%len(far)
		fmt.Fprintf(w, "sending %d frames of 60 to 1514 bytes from %s, expecting them at %s\n", n, far[from].Name, far[to].Name)
		got, err := oneWay(ctx, raws[from], raws[to], byte(dir), n, macswap)
		if err != nil {
			return res, err
		}
		res.sent += n
		res.arrived += got
	}
	return res, nil
}

// testFrame is frame seq of direction dir: broadcast, the test EtherType,
// the direction and sequence, a pattern, 60 to 1514 bytes.
func testFrame(dir byte, seq int) []byte {
	size := 60 + seq*97%1455
	b := make([]byte, size)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x6c, 0x32, 0x66, dir, byte(seq)})
	binary.BigEndian.PutUint16(b[12:], testEtherType)
	b[14] = dir
	binary.BigEndian.PutUint32(b[15:], uint32(seq))
	for i := 19; i < size; i++ {
		b[i] = byte(seq) ^ byte(i)
	}
	return b
}

// oneWay sends n test frames on from and collects them on to, for up to
// three seconds after the last is sent.
func oneWay(ctx context.Context, from, to *bed.Raw, dir byte, n int, macswap bool) (int, error) {
	want := make(map[uint32][]byte, n)
	for seq := range n {
		f := testFrame(dir, seq)
		if macswap {
			swapMAC(f)
		}
		want[uint32(seq)] = f
	}
	var (
		mu   sync.Mutex
		good int
		rerr error
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			select {
			case <-stop:
				return
			default:
			}
			m, err := to.Recv(buf, 50*time.Millisecond)
			if err != nil {
				mu.Lock()
				rerr = err
				mu.Unlock()
				return
			}
			if m < 19 || binary.BigEndian.Uint16(buf[12:]) != testEtherType || buf[14] != dir {
				continue
			}
			seq := binary.BigEndian.Uint32(buf[15:])
			mu.Lock()
			if exp, ok := want[seq]; ok && bytes.Equal(exp, buf[:m]) {
				delete(want, seq)
				good++
			}
			mu.Unlock()
		}
	}()
	for seq := range n {
		if err := from.Send(testFrame(dir, seq)); err != nil {
			close(stop)
			<-done
			return 0, err
		}
		if seq%32 == 31 {
			time.Sleep(time.Millisecond) // let the receiver keep up
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		mu.Lock()
		left := len(want)
		mu.Unlock()
		if left == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	return good, rerr
}
