package connloop

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

// recorder is a reader and writer that keeps the size of every call: it
// reads from in (then fails with readErr, io.EOF if nil) and writes to out
// until out holds limit bytes, then fails with errFull.
type recorder struct {
	in      []byte
	readErr error
	reads   []int
	out     bytes.Buffer
	limit   int
	writes  []int
}

var errFull = errors.New("full")

func (r *recorder) Read(b []byte) (int, error) {
	r.reads = append(r.reads, len(b))
	if len(r.in) == 0 {
		if r.readErr != nil {
			return 0, r.readErr
		}
		return 0, io.EOF
	}
	n := copy(b, r.in)
	r.in = r.in[n:]
	return n, nil
}

func (r *recorder) Write(b []byte) (int, error) {
	r.writes = append(r.writes, len(b))
	room := r.limit - r.out.Len()
	if len(b) > room {
		r.out.Write(b[:room])
		return room, errFull
	}
	return r.out.Write(b)
}

func TestDrain(t *testing.T) {
	errBroken := errors.New("broken")
	tests := []struct {
		name    string
		in      int
		readErr error
		buf     int
		want    int64
		reads   []int
		err     error
	}{
		{name: "to the end", in: 10, buf: 4, want: 10, reads: []int{4, 4, 4, 4}},
		{name: "empty", in: 0, buf: 4, want: 0, reads: []int{4}},
		{name: "error after data", in: 5, readErr: errBroken, buf: 8, want: 5, reads: []int{8, 8}, err: errBroken},
		{name: "no buffer", in: 5, buf: 0, want: 0, err: io.ErrShortBuffer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{in: make([]byte, tt.in), readErr: tt.readErr}
			got, err := Drain(r, make([]byte, tt.buf))
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Errorf("Drain = %d, %v; want %d, %v", got, err, tt.want, tt.err)
			}
			if !slices.Equal(r.reads, tt.reads) {
				t.Errorf("reads asked for %v bytes; want %v (every read the whole buffer)", r.reads, tt.reads)
			}
		})
	}
}

func TestWriteN(t *testing.T) {
	tests := []struct {
		name   string
		n      int64
		block  int
		limit  int
		want   int64
		writes []int
		err    error
	}{
		{name: "whole blocks", n: 8, block: 4, limit: 100, want: 8, writes: []int{4, 4}},
		{name: "short last", n: 10, block: 4, limit: 100, want: 10, writes: []int{4, 4, 2}},
		{name: "nothing", n: 0, block: 4, limit: 100, want: 0},
		{name: "writer fails", n: 10, block: 4, limit: 6, want: 6, writes: []int{4, 4}, err: errFull},
		{name: "no block", n: 10, block: 0, limit: 100, want: 0, err: io.ErrShortBuffer},
		{name: "no block, nothing to write", n: 0, block: 0, limit: 100, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &recorder{limit: tt.limit}
			block := bytes.Repeat([]byte{7}, tt.block)
			got, err := WriteN(w, block, tt.n)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Errorf("WriteN = %d, %v; want %d, %v", got, err, tt.want, tt.err)
			}
			if !slices.Equal(w.writes, tt.writes) {
				t.Errorf("writes of %v bytes; want %v", w.writes, tt.writes)
			}
			if w.out.Len() != int(tt.want) || bytes.ContainsFunc(w.out.Bytes(), func(r rune) bool { return r != 7 }) {
				t.Errorf("wrote %d bytes %x; want %d bytes of the block", w.out.Len(), w.out.Bytes(), tt.want)
			}
			if !bytes.Equal(block, bytes.Repeat([]byte{7}, tt.block)) {
				t.Errorf("block changed to %x; WriteN only reads it", block)
			}
		})
	}
}

func TestEcho(t *testing.T) {
	in := []byte("0123456789")
	t.Run("to the end", func(t *testing.T) {
		rw := &recorder{in: slices.Clone(in), limit: 100}
		got, err := Echo(rw, make([]byte, 4))
		if got != 10 || err != nil {
			t.Fatalf("Echo = %d, %v; want 10, nil", got, err)
		}
		if rw.out.String() != string(in) {
			t.Errorf("echoed %q; want %q", rw.out.String(), in)
		}
		if !slices.Equal(rw.reads, []int{4, 4, 4, 4}) || !slices.Equal(rw.writes, []int{4, 4, 2}) {
			t.Errorf("reads %v, writes %v; want [4 4 4 4], [4 4 2]", rw.reads, rw.writes)
		}
	})
	t.Run("write fails", func(t *testing.T) {
		rw := &recorder{in: slices.Clone(in), limit: 5}
		got, err := Echo(rw, make([]byte, 4))
		if got != 5 || !errors.Is(err, errFull) {
			t.Errorf("Echo = %d, %v; want 5, %v", got, err, errFull)
		}
	})
	t.Run("no buffer", func(t *testing.T) {
		rw := &recorder{in: slices.Clone(in), limit: 100}
		got, err := Echo(rw, nil)
		if got != 0 || !errors.Is(err, io.ErrShortBuffer) || len(rw.reads) != 0 {
			t.Errorf("Echo = %d, %v after %d reads; want 0, %v and no read", got, err, len(rw.reads), io.ErrShortBuffer)
		}
	})
	t.Run("read fails", func(t *testing.T) {
		errBroken := errors.New("broken")
		rw := &recorder{in: slices.Clone(in[:3]), readErr: errBroken, limit: 100}
		got, err := Echo(rw, make([]byte, 4))
		if got != 3 || !errors.Is(err, errBroken) {
			t.Errorf("Echo = %d, %v; want 3, %v", got, err, errBroken)
		}
	})
}
