package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/secretscan"
)

const guardToken = "ghp_guardTokenValue0123456789abcdefXYZ"

// A run that carries a credential: every program start whose command line
// holds it (raw or encoded, in any argument, from bash or from code the
// analyzer never sees) is refused with EPERM; the rest run.
func TestExecGuard(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	s := shellSpec(workspace(t), `
/bin/echo "$T" && echo echo-ran; echo "rc-echo=$?"
env X=1 /bin/true "prefix-$T-suffix"; echo "rc-env=$?"
/bin/true "$(printf %s "$T" | base64 -w0)"; echo "rc-b64=$?"
python3 -c 'import os, subprocess
try:
    subprocess.run(["/bin/true", "x", os.environ["T"]]); print("py-ran")
except PermissionError as e:
    print("py-refused", e.errno)'
/bin/echo fine; echo "rc-fine=$?"
T2=$T /usr/bin/printenv T2 | wc -c`)
	s.Env = append(s.Env, "T="+guardToken)
	s.Credentials = []secretscan.Secret{{ID: "gh", Value: guardToken}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	for _, want := range []string{"rc-echo=126", "rc-env=126", "rc-b64=126", "py-refused 1", "fine\nrc-fine=0", "\n" + "39\n"} {
		assert.Check(t, is.Contains(r.stdout, want), r.stdout+r.stderr)
	}
	assert.Check(t, !strings.Contains(r.stdout, "echo-ran") && !strings.Contains(r.stdout, "py-ran"), r.stdout)
	assert.Check(t, !strings.Contains(r.stdout, guardToken), "the value reached the output through a command line")
	progs := map[string]int{}
	for _, a := range r.ArgvRefused {
		progs[a.Program]++
		assert.Check(t, is.Equal(a.Credential, "gh"))
	}
	assert.Check(t, is.DeepEqual(progs, map[string]int{"/bin/echo": 1, "/usr/bin/env": 1, "/bin/true": 2}), "%+v", r.ArgvRefused)
	for _, a := range r.ArgvRefused {
		if a.Program == "/usr/bin/env" {
			assert.Check(t, is.Equal(a.Argument, 3))
		}
	}
	assert.Check(t, is.Contains(r.Message, "refused 4 program start(s)"))
}

// A run without credentials installs no guard.
func TestExecGuardOnlyWithCredentials(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	s := shellSpec(workspace(t), `grep -c . /proc/self/status >/dev/null; awk '/^Seccomp_filters/ {print $2}' /proc/self/status`)
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	without := strings.TrimSpace(r.stdout)
	s.Credentials = []secretscan.Secret{{ID: "gh", Value: guardToken}}
	r = runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	with := strings.TrimSpace(r.stdout)
	assert.Check(t, without != "" && with != without, "filters without a credential %q, with %q", without, with)
}

// A run that carries a credential and writes it into the workspace (raw,
// or base64 in a subdirectory) is reported with those files; a file that
// held it before the run is not the run's doing.
func TestCredentialWritten(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	assert.NilError(t, os.WriteFile(filepath.Join(ws, "before.txt"), []byte(guardToken), 0o644))
	time.Sleep(20 * time.Millisecond)
	s := shellSpec(ws, `printf 'token=%s\n' "$T" > leak.txt; mkdir -p sub; printf %s "$T" | base64 > sub/b64.txt; echo clean > other.txt`)
	s.Env = append(s.Env, "T="+guardToken)
	s.Credentials = []secretscan.Secret{{ID: "gh", Value: guardToken}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.DeepEqual(r.CredentialWritten, []WrittenCredential{
		{Path: filepath.Join(ws, "leak.txt"), Credential: "gh"},
		{Path: filepath.Join(ws, "sub", "b64.txt"), Credential: "gh"},
	}))
}

// The guard's reader of a caller's argument vector, on this process's own
// memory laid out as a caller's could be: strings in the chunk of the
// pointer array or elsewhere, an unaligned array across a chunk boundary
// (the kernel takes it; a reader that resumes at the boundary misreads
// every pointer after it), strings across chunks; unreadable memory
// (EFAULT) and the bounds (E2BIG), whichever comes first.
func TestExecGuardReadArgv(t *testing.T) {
	const c = memChunk
	mem, err := unix.Mmap(-1, 0, 8*c, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	assert.NilError(t, err)
	defer unix.Munmap(mem)
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	str := func(off int, s string) uint64 {
		copy(mem[off:], s)
		mem[off+len(s)] = 0
		return base + uint64(off)
	}
	array := func(off int, ps ...uint64) uint64 {
		for i, p := range append(ps, 0) {
			binary.NativeEndian.PutUint64(mem[off+8*i:], p)
		}
		return base + uint64(off)
	}
	m := newCallerMem()
	read := func(addr uint64) ([]string, error) {
		m.reset(os.Getpid())
		argv, err := m.readArgv(addr)
		var out []string
		for _, a := range argv {
			out = append(out, string(a))
		}
		return out, err
	}
	long := strings.Repeat("L", 2*c+5)

	// Everything in the array's chunk.
	a := array(100, str(10, "/bin/true"), str(300, ""), str(40, "x"))
	got, err := read(a)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []string{"/bin/true", "", "x"}))
	assert.Check(t, is.Equal(m.used, 1), "one read for it all")

	// An unaligned array across chunks 1 and 2, strings in chunks 0, 3
	// and across 4 to 6.
	a = array(2*c-12, str(3*c+7, "first"), str(700, "second"), str(4*c+100, long))
	got, err = read(a)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []string{"first", "second", long}))
	got, err = read(array(0))
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 0))

	// Unreadable memory: a string, the array's continuation, a string
	// running into it.
	assert.NilError(t, unix.Mprotect(mem[7*c:], unix.PROT_NONE))
	defer unix.Mprotect(mem[7*c:], unix.PROT_READ|unix.PROT_WRITE)
	for name, addr := range map[string]uint64{
		"string":       array(200, str(20, "ok"), base+7*c+10),
		"array":        base + 7*c - 8,
		"running into": array(260, base+7*c-3),
	} {
		if name == "array" {
			binary.NativeEndian.PutUint64(mem[7*c-8:], base+20)
		}
		if name == "running into" {
			copy(mem[7*c-3:], "abc")
		}
		_, err := read(addr)
		assert.Check(t, err != nil && !errors.Is(err, unix.E2BIG), "%s: %v", name, err)
	}

	// The bounds, and their order with a fault.
	s := str(3*c+500, "0123456789")
	m.reset(os.Getpid())
	_, err = m.str(s, 9)
	assert.Check(t, is.ErrorIs(err, unix.E2BIG))
	b, err := m.str(s, 10)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(b), "0123456789"))
	m.reset(os.Getpid())
	_, err = m.str(base+4*c+100, len(long)-1)
	assert.Check(t, is.ErrorIs(err, unix.E2BIG))

	big, err := unix.Mmap(-1, 0, maxArgvBytes+2*c, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	assert.NilError(t, err)
	defer unix.Munmap(big)
	for i := range maxArgvBytes + 1 { // one past the bound
		big[i] = 'b'
	}
	huge := uint64(uintptr(unsafe.Pointer(&big[0])))
	_, err = read(array(300, huge, base+7*c))
	assert.Check(t, is.ErrorIs(err, unix.E2BIG), "the longer string comes first")
	_, err = read(array(300, base+7*c, huge))
	assert.Check(t, err != nil && !errors.Is(err, unix.E2BIG), "the fault comes first: %v", err)
	big[maxArgvBytes/2] = 0 // two strings, one byte past the bound with their NULs
	_, err = read(array(300, huge, huge+maxArgvBytes/2+1))
	assert.Check(t, is.ErrorIs(err, unix.E2BIG))
	big[maxArgvBytes] = 0 // at the bound
	got, err = read(array(300, huge, huge+maxArgvBytes/2+1))
	assert.NilError(t, err)
	assert.Check(t, is.Len(got, 2))

	// The number of arguments.
	ptrs := make([]byte, 8*(maxArgvArgs+1))
	for i := range maxArgvArgs + 1 {
		binary.NativeEndian.PutUint64(ptrs[8*i:], base+20)
	}
	bounded := func(n int) error {
		binary.NativeEndian.PutUint64(ptrs[8*n:], 0)
		defer binary.NativeEndian.PutUint64(ptrs[8*n:], base+20)
		_, err := read(uint64(uintptr(unsafe.Pointer(&ptrs[0]))))
		return err
	}
	assert.NilError(t, bounded(maxArgvArgs))
	binary.NativeEndian.PutUint64(ptrs[8*maxArgvArgs:], base+20)
	ptrs = append(ptrs, make([]byte, 8)...)
	assert.Check(t, is.ErrorIs(bounded(maxArgvArgs+1), unix.E2BIG))
	runtime.KeepAlive(ptrs)

	// The buffers serve the next call, shrunk.
	got, err = read(array(100, base+10, base+40))
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []string{"/bin/true", "x"}))
	assert.Check(t, len(m.chunks) <= keepChunks && cap(m.argv) <= 1024)
}

// The guard shares the output's matcher: a punctuated value in any
// percent-encoding (Python's quote keeps '/', which neither of Go's
// escapers does) and the decoded bytes of a base64 key, in hex, are
// refused on a command line as well.
func TestExecGuardEscapedAndDecoded(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	const pass = "Xk9#mP2$vL7&nQ4+wR8/tY3=zB6!cF1@"
	const key = "q0J3cWx8R1bJ0m0Bf2Yx4mZ0n6ZQw3k8a7V0T1lJ2b5Z9c6d3e4f5g6h7i8j9k0L" // 48 bytes, base64
	s := shellSpec(workspace(t), `
python3 -c 'import os, subprocess, urllib.parse as u
try:
    subprocess.run(["/bin/true", "x", u.quote(os.environ["P"])]); print("py-ran")
except PermissionError as e:
    print("py-refused", e.errno)'
/bin/true "$(printf %s "$K" | base64 -d | od -An -tx1 | tr -d ' \n')"; echo "rc-hex=$?"`)
	s.Env = append(s.Env, "P="+pass, "K="+key)
	s.Credentials = []secretscan.Secret{{ID: "db", Value: pass}, {ID: "key", Value: key}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	for _, want := range []string{"py-refused 1", "rc-hex=126"} {
		assert.Check(t, is.Contains(r.stdout, want), r.stdout+r.stderr)
	}
	got := map[string]bool{}
	for _, a := range r.ArgvRefused {
		got[a.Credential] = true
	}
	assert.Check(t, is.DeepEqual(got, map[string]bool{"db": true, "key": true}), "%+v", r.ArgvRefused)
}
