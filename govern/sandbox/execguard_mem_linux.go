package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// memChunk is the unit the guard reads a caller's memory in: a 4 KiB
// aligned block lies within one page on every page size, so it is
// readable whole or not at all, like the memory the kernel would copy.
const memChunk = 4096

// callerMem reads one waiting call's memory (process_vm_readv), a chunk
// at a time and each chunk once: a command line's pointer array and its
// strings mostly share a few chunks (bash's strings sit within a KiB or
// so of its array), so one read serves several of them, where a read per
// string and one per 512 bytes of pointers was the rule. Its buffers
// serve every call; the guard's loop is its only user.
type callerMem struct {
	pid    int
	index  map[uint64]int // chunk address → slot in chunks
	chunks [][]byte       // the first used hold this call's chunks
	used   int
	joined []byte   // strings that span chunks, each contiguous
	argv   [][]byte // the last call's arguments
	local  [1]unix.Iovec
	remote [1]unix.RemoteIovec
}

// Past these the buffers of a call are let go rather than kept.
const (
	keepChunks = 16
	keepJoined = 64 << 10
)

func newCallerMem() *callerMem {
	return &callerMem{index: map[uint64]int{}}
}

// reset starts a call of process pid, dropping what an unusually large
// previous one grew.
func (m *callerMem) reset(pid int) {
	m.pid = pid
	if m.used > keepChunks {
		m.index = map[uint64]int{}
		m.chunks = append([][]byte(nil), m.chunks[:keepChunks]...)
	} else {
		clear(m.index)
	}
	m.used = 0
	if cap(m.joined) > keepJoined {
		m.joined = nil
	}
	m.joined = m.joined[:0]
	clear(m.argv)
	if cap(m.argv) > 1024 {
		m.argv = nil
	}
	m.argv = m.argv[:0]
}

// chunk returns the chunk at base (aligned), read on first use.
func (m *callerMem) chunk(base uint64) ([]byte, error) {
	if i, ok := m.index[base]; ok {
		return m.chunks[i], nil
	}
	if m.used == len(m.chunks) {
		m.chunks = append(m.chunks, make([]byte, memChunk))
	}
	buf := m.chunks[m.used]
	if err := m.read(base, buf); err != nil {
		return nil, err
	}
	m.index[base] = m.used
	m.used++
	return buf, nil
}

// word reads the 8 bytes at addr, which may straddle two chunks (an
// argument vector need not be aligned).
func (m *callerMem) word(addr uint64) (uint64, error) {
	var w [8]byte
	for n := 0; n < len(w); {
		a := addr + uint64(n)
		c, err := m.chunk(a &^ (memChunk - 1))
		if err != nil {
			return 0, err
		}
		n += copy(w[n:], c[a%memChunk:])
	}
	return binary.NativeEndian.Uint64(w[:]), nil
}

// str reads the NUL-terminated string at addr, at most limit bytes
// (E2BIG past them). The result is valid until the next reset.
func (m *callerMem) str(addr uint64, limit int) ([]byte, error) {
	c, err := m.chunk(addr &^ (memChunk - 1))
	if err != nil {
		return nil, err
	}
	rest := c[addr%memChunk:]
	if i := bytes.IndexByte(rest, 0); i >= 0 {
		if i > limit {
			return nil, unix.E2BIG
		}
		return rest[:i:i], nil
	}
	// Longer than its chunk: gathered, chunk by chunk, in joined (a
	// reallocation leaves the strings already returned where they are).
	start := len(m.joined)
	for {
		m.joined = append(m.joined, rest...)
		if len(m.joined)-start > limit {
			return nil, unix.E2BIG
		}
		addr += uint64(len(rest))
		if rest, err = m.chunk(addr); err != nil {
			return nil, err
		}
		if i := bytes.IndexByte(rest, 0); i >= 0 {
			m.joined = append(m.joined, rest[:i]...)
			if len(m.joined)-start > limit {
				return nil, unix.E2BIG
			}
			return m.joined[start:len(m.joined):len(m.joined)], nil
		}
	}
}

// readArgv reads the NULL-terminated array of string pointers at addr,
// and the strings, one pointer and its string after the other: the first
// of them that cannot be read, or that passes the bounds, is the answer.
func (m *callerMem) readArgv(addr uint64) ([][]byte, error) {
	total := 0
	for i := uint64(0); ; i++ {
		p, err := m.word(addr + 8*i)
		if err != nil {
			return nil, err
		}
		if p == 0 {
			return m.argv, nil
		}
		if len(m.argv) >= maxArgvArgs {
			return nil, unix.E2BIG
		}
		s, err := m.str(p, maxArgvBytes-total)
		if err != nil {
			return nil, err
		}
		total += len(s) + 1
		m.argv = append(m.argv, s)
	}
}

// read fills buf from the caller's memory at addr.
func (m *callerMem) read(addr uint64, buf []byte) error {
	m.local[0] = unix.Iovec{Base: &buf[0]}
	m.local[0].SetLen(len(buf))
	m.remote[0] = unix.RemoteIovec{Base: uintptr(addr), Len: len(buf)}
	// A plain system call, not a raw one: it may wait on a fault in the
	// caller's memory.
	n, err := unix.ProcessVMReadv(m.pid, m.local[:], m.remote[:], 0)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("read %d of %d bytes of process %d", n, len(buf), m.pid)
	}
	return nil
}
