package secretscan

import (
	"encoding/binary"
	"testing"
)

// TestMasks: the eight-bytes-at-a-time classes agree with the byte tables
// for every byte in every position, next to every kind of neighbour
// (carries must not cross bytes); mayRun is a superset of runMask, and
// runExact is runMask.
func TestMasks(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		for pos := range 8 {
			for _, fill := range []byte{0, ' ', 'a', 0x7f, 0x80, 0xff, '+', '9'} {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				w := binary.LittleEndian.Uint64(b[:])
				for i, x := range b {
					bit := uint64(0x80) << (8 * i)
					if got, want := symMask(w)&bit != 0, class[x]&clSym != 0; got != want {
						t.Fatalf("symMask %#x at %d in %q: %v", x, i, b, got)
					}
					if got, want := runMask(w)&bit != 0, class[x]&clRun != 0; got != want {
						t.Fatalf("runMask %#x at %d in %q: %v", x, i, b, got)
					}
					if got, want := runExact(w)&bit != 0, class[x]&clRun != 0; got != want {
						t.Fatalf("runExact %#x at %d in %q: %v", x, i, b, got)
					}
					if class[x]&clRun != 0 && mayRunSym(w, symMask(w))&bit == 0 {
						t.Fatalf("mayRunSym misses %#x at %d in %q", x, i, b)
					}
					if class[x]&clRun != 0 && mayRun(w)&bit == 0 {
						t.Fatalf("mayRun misses %#x at %d in %q", x, i, b)
					}
					if got, want := equal(w, '/')&bit != 0, x == '/'; got != want {
						t.Fatalf("equal %#x at %d in %q: %v", x, i, b, got)
					}
				}
			}
		}
	}
	// The gather multiply and first4 give the first four symbol bytes.
	for m := range 256 {
		var mask uint64
		n := 0
		for b := range 8 {
			if m&(1<<b) != 0 {
				mask |= 0x80 << (8 * b)
				n++
			}
		}
		if got := (mask >> 7 * 0x0102040810204080) >> 56; got != uint64(m) {
			t.Fatalf("gather %#x: %#x", m, got)
		}
		if f := first4[m]; (f != 0) != (n >= 4) {
			t.Fatalf("first4[%#x] = %#x", m, f)
		}
	}
}

// TestBounds: the sampling arguments in textMatches hold for the
// constants as set.
func TestBounds(t *testing.T) {
	t.Parallel()
	if textStride > minLane-3 {
		t.Errorf("textStride %d: a match of %d symbols may hold no sample", textStride, minLane)
	}
	if minRun < 2*textStride+7 || minRun-8 < 28 {
		t.Errorf("minRun %d: a run may hold no other sample's word", minRun)
	}
	if MaxContext <= maxDumpLine {
		t.Errorf("MaxContext %d must hold a dump line (%d)", MaxContext, maxDumpLine)
	}
}
