package arch

import (
	"encoding/binary"
	"testing"
)

func TestPublishDoorbellStoresBothWords(t *testing.T) {
	var rec [2]uint32
	var uar uint64
	wqe := []byte{0x00, 0x00, 0x05, 0x0a, 0x00, 0x12, 0x34, 0x04}
	PublishDoorbell(&rec[1], BigEndianWord(0x1234), &uar, NativeWord64(wqe))
	var got [4]byte
	binary.NativeEndian.PutUint32(got[:], rec[1])
	if binary.BigEndian.Uint32(got[:]) != 0x1234 {
		t.Fatalf("record bytes %x, want big-endian 0x1234", got)
	}
	if rec[0] != 0 {
		t.Fatal("PublishDoorbell wrote the neighbouring record")
	}
	var u [8]byte
	binary.NativeEndian.PutUint64(u[:], uar)
	if string(u[:]) != string(wqe) {
		t.Fatalf("UAR bytes %x, want the WQE's first 8 bytes %x", u, wqe)
	}
}

func TestRecordStores(t *testing.T) {
	for _, store := range []func(*uint32, uint32){PublishDbrec, ReleaseCQ} {
		var rec uint32
		store(&rec, BigEndianWord(0xabcdef))
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], rec)
		if b != [4]byte{0x00, 0xab, 0xcd, 0xef} {
			t.Fatalf("record bytes %x", b)
		}
	}
}

func TestLoadCQEHeader(t *testing.T) {
	cqe := make([]byte, 64)
	copy(cqe[60:], []byte{0x12, 0x34, 0x00, 0xf1})
	for _, load := range []func(*byte) uint32{LoadCQEHeader, LoadCQEHeaderRaw} {
		if got := load(&cqe[60]); got != 0x123400f1 {
			t.Fatalf("header %#x, want 0x123400f1", got)
		}
	}
	Prefetch(&cqe[0]) // must not fault
}

func TestBigEndianWordIsAnInvolution(t *testing.T) {
	for _, v := range []uint32{0, 1, 0xffff, 0x01020304, 0xffffffff} {
		if BigEndianWord(BigEndianWord(v)) != v {
			t.Fatalf("%#x does not round-trip", v)
		}
	}
}

func BenchmarkPublishDoorbell(b *testing.B) {
	var rec uint32
	var uar uint64
	for i := 0; b.Loop(); i++ {
		PublishDoorbell(&rec, BigEndianWord(uint32(i)&0xffff), &uar, uint64(i))
	}
}
