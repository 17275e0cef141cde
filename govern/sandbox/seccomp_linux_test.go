package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/sandbox/internal/seccomppolicy"
)

const (
	retAllow  = uint32(seccomp.ActionAllow)
	retEPERM  = uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
	retENOSYS = uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
	retKill   = uint32(seccomp.ActionKillProcess)
)

// seccompData encodes struct seccomp_data for x/net/bpf's VM, which loads
// words big-endian: each 32-bit word is written big-endian at the offset
// the kernel (native order) would read it from.
func seccompData(auditArch uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], auditArch)
	little := *(*byte)(unsafe.Pointer(&[]uint16{1}[0])) == 1
	for i, a := range args {
		lo, hi := 16+8*i, 16+8*i+4
		if !little {
			lo, hi = hi, lo
		}
		binary.BigEndian.PutUint32(b[lo:], uint32(a))
		binary.BigEndian.PutUint32(b[hi:], uint32(a>>32))
	}
	return b
}

// The program the sandbox ships is the policy, assembled: go generate
// after changing the policy.
func TestSeccompProgramIsThePolicy(t *testing.T) {
	t.Parallel()
	want, err := seccomppolicy.Bytes()
	assert.NilError(t, err)
	got, err := programBytes()
	assert.NilError(t, err)
	assert.Check(t, bytes.Equal(got, want), "seccomp_prog_linux_%s.go is stale: run go generate in govern/sandbox", runtime.GOARCH)
}

// The shipped program, run in a BPF VM over synthetic system calls.
func TestSeccompProgram(t *testing.T) {
	t.Parallel()
	filter, err := filterProgram()
	assert.NilError(t, err)
	insts := make([]bpf.Instruction, len(filter))
	for i, f := range filter {
		insts[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
	}
	vm, err := bpf.NewVM(insts)
	assert.NilError(t, err)
	info, err := arch.GetInfo("")
	assert.NilError(t, err)
	nr := func(name string) int {
		n, ok := info.SyscallNames[name]
		assert.Assert(t, ok, name)
		return n
	}
	run := func(auditArch uint32, n int, args ...uint64) uint32 {
		out, err := vm.Run(seccompData(auditArch, n, args...))
		assert.NilError(t, err)
		return uint32(out)
	}
	native := uint32(info.ID)
	for _, tc := range []struct {
		name string
		call string
		args []uint64
		want uint32
	}{
		{"socket(AF_UNIX)", "socket", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retEPERM},
		{"socket(AF_INET)", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM}, retAllow},
		{"socket(AF_UNIX) with high bits", "socket", []uint64{1<<32 | unix.AF_UNIX}, retAllow},
		{"socketpair(AF_UNIX)", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retAllow},
		{"unshare(CLONE_NEWUSER)", "unshare", []uint64{unix.CLONE_NEWUSER}, retEPERM},
		{"unshare(CLONE_NEWNET|CLONE_FILES)", "unshare", []uint64{unix.CLONE_NEWNET | unix.CLONE_FILES}, retEPERM},
		{"unshare(CLONE_NEWTIME)", "unshare", []uint64{unix.CLONE_NEWTIME}, retEPERM},
		{"unshare(CLONE_FILES)", "unshare", []uint64{unix.CLONE_FILES}, retAllow},
		{"clone(SIGCHLD)", "clone", []uint64{uint64(unix.SIGCHLD)}, retAllow},
		{"clone(thread)", "clone", []uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM}, retAllow},
		{"clone(CLONE_NEWUSER)", "clone", []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, retEPERM},
		{"clone(CLONE_NEWPID)", "clone", []uint64{unix.CLONE_NEWPID}, retEPERM},
		{"clone3", "clone3", nil, retENOSYS},
		{"ioctl(TIOCSTI)", "ioctl", []uint64{0, unix.TIOCSTI}, retEPERM},
		{"ioctl(TCGETS)", "ioctl", []uint64{0, unix.TCGETS}, retAllow},
		{"read", "read", nil, retAllow},
		{"execve", "execve", nil, retAllow},
		{"socketpair", "socketpair", []uint64{unix.AF_INET}, retAllow},
	} {
		assert.Check(t, is.Equal(run(native, nr(tc.call), tc.args...), tc.want), tc.name)
	}
	for _, name := range seccomppolicy.DeniedSyscalls {
		assert.Check(t, is.Equal(run(native, nr(name)), retEPERM), name)
	}
	// Another architecture's calls (i386 through int 0x80, AArch32) are
	// killed whatever they are: the rules above are by native numbers.
	for _, foreign := range []*arch.Info{arch.I386, arch.ARM} {
		if foreign.ID == info.ID {
			continue
		}
		assert.Check(t, is.Equal(run(uint32(foreign.ID), 0), retKill), foreign.Name)
		assert.Check(t, is.Equal(run(uint32(foreign.ID), foreign.SyscallNames["socketcall"], 1), retKill), foreign.Name)
	}
	if runtime.GOARCH == "amd64" {
		assert.Check(t, is.Equal(run(native, nr("socket")|0x40000000, unix.AF_UNIX), retENOSYS), "x32 ABI")
	}
}

// Every denied call exists on both supported architectures, so the policy
// assembles there too.
func TestSeccompNamesOnEveryArch(t *testing.T) {
	t.Parallel()
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		for _, name := range append(slices.Clone(seccomppolicy.DeniedSyscalls), "socket", "unshare", "clone", "clone3", "ioctl") {
			_, ok := a.SyscallNames[name]
			assert.Check(t, ok, "%s has no %s", a.Name, name)
		}
	}
}

// The filter installs on a real process and holds (ProbeSeccompChild runs
// in a child: the test process stays unfiltered).
func TestSeccompInstallsInChild(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(selfExe(t), HelperProbeSeccomp).Output()
	assert.NilError(t, err, string(out))
	var p seccompProbe
	assert.NilError(t, json.Unmarshal(out, &p))
	assert.Check(t, p.OK, p.Detail)
}
