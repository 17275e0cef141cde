package sandbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/sandbox/internal/seccomppolicy"
)

const (
	retAllow  = uint32(unix.SECCOMP_RET_ALLOW)
	retEPERM  = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	retENOSYS = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
	retKill   = uint32(unix.SECCOMP_RET_KILL_PROCESS)
)

// seccompData encodes struct seccomp_data for x/net/bpf's VM, which loads
// words big-endian: each 32-bit word is written big-endian at the offset
// the kernel (in the architecture's order) would read it from. The
// architecture's order is in its audit value (__AUDIT_ARCH_LE).
func seccompData(auditArch uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], auditArch)
	little := auditArch&0x40000000 != 0
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

// The shipped program, run in a BPF VM over synthetic system calls; and
// the policy as assembled for every supported architecture (arm64's
// program is assembled at start).
func TestSeccompProgram(t *testing.T) {
	t.Parallel()
	filter, err := filterProgram()
	assert.NilError(t, err)
	raw := make([]bpf.RawInstruction, len(filter))
	for i, f := range filter {
		raw[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	info, err := arch.GetInfo("")
	assert.NilError(t, err)
	t.Run("shipped", func(t *testing.T) {
		t.Parallel()
		checkProgram(t, info, raw)
	})
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			raw, err := seccomppolicy.ProgramFor(a)
			assert.NilError(t, err)
			checkProgram(t, a, raw)
		})
	}
}

// checkProgram runs raw, the filter for architecture a, over the table.
func checkProgram(t *testing.T, a *arch.Info, raw []bpf.RawInstruction) {
	insts := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		insts[i] = r.Disassemble()
	}
	vm, err := bpf.NewVM(insts)
	assert.NilError(t, err)
	nr := func(name string) int {
		n, ok := a.SyscallNames[name]
		assert.Assert(t, ok, name)
		return n
	}
	run := func(auditArch uint32, n int, args ...uint64) uint32 {
		out, err := vm.Run(seccompData(auditArch, n, args...))
		assert.NilError(t, err)
		return uint32(out)
	}
	native := uint32(a.ID)
	for _, tc := range seccompTable {
		assert.Check(t, is.Equal(run(native, nr(tc.call), tc.args...), tc.want), tc.name)
	}
	denied := slices.Clone(newlyDenied)
	if a.ID == arch.X86_64.ID {
		denied = append(denied, newlyDeniedX86_64...)
	}
	for _, name := range append(denied, seccomppolicy.Denied(a)...) {
		assert.Check(t, is.Equal(run(native, nr(name)), retEPERM), name)
	}
	// Another architecture's calls (i386 through int 0x80, AArch32) are
	// killed whatever they are: the rules above are by native numbers.
	for _, foreign := range []*arch.Info{arch.I386, arch.ARM} {
		assert.Check(t, is.Equal(run(uint32(foreign.ID), 0), retKill), foreign.Name)
		assert.Check(t, is.Equal(run(uint32(foreign.ID), foreign.SyscallNames["socketcall"], 1), retKill), foreign.Name)
	}
	if a.ID == arch.X86_64.ID {
		// The calls arm64 does not have.
		assert.Check(t, is.Equal(run(native, nr("chmod"), 0, 0o4755), retEPERM), "chmod(04755)")
		assert.Check(t, is.Equal(run(native, nr("chmod"), 0, hi|0o2755), retEPERM), "chmod(02755) with high bits")
		assert.Check(t, is.Equal(run(native, nr("chmod"), 0, 0o755), retAllow), "chmod(0755)")
		assert.Check(t, is.Equal(run(native, nr("creat"), 0, 0o4755), retEPERM), "creat(04755)")
		assert.Check(t, is.Equal(run(native, nr("creat"), 0, 0o644), retAllow), "creat(0644)")
		assert.Check(t, is.Equal(run(native, nr("mknod"), 0, unix.S_IFREG|0o6755, 0), retEPERM), "mknod(S_IFREG|06755)")
		assert.Check(t, is.Equal(run(native, nr("open"), 0, unix.O_CREAT|unix.O_WRONLY, 0o4755), retEPERM), "open(O_CREAT, 04755)")
		assert.Check(t, is.Equal(run(native, nr("open"), 0, unix.O_RDONLY, 0o4755), retAllow), "open(O_RDONLY, junk mode)")
		assert.Check(t, is.Equal(run(native, nr("open"), 0, unix.O_CREAT, 0o644), retAllow), "open(O_CREAT, 0644)")
		assert.Check(t, is.Equal(run(native, nr("socket")|0x40000000, unix.AF_UNIX), retENOSYS), "x32 ABI")
		assert.Check(t, is.Equal(run(native, nr("socket")|0x40000000, unix.AF_INET), retENOSYS), "x32 ABI")
		assert.Check(t, is.Equal(run(native, nr("modify_ldt")), retAllow), "modify_ldt")
	}
}

// Every denied call exists on both supported architectures, so the policy
// assembles there too.
func TestSeccompNamesOnEveryArch(t *testing.T) {
	t.Parallel()
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		for _, name := range append(seccomppolicy.Denied(a), "socket", "socketpair", "unshare", "clone", "clone3", "ioctl", "personality", "openat2", "fchmod", "fchmodat", "fchmodat2", "mknodat", "openat") {
			_, ok := a.SyscallNames[name]
			assert.Check(t, ok, "%s has no %s", a.Name, name)
		}
		_, err := seccomppolicy.ProgramFor(a)
		assert.Check(t, err, a.Name)
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

// hi sets an argument's high 32 bits, which the kernel ignores for int and
// unsigned int arguments: a filter comparing 64 bits is bypassed by them.
const hi = uint64(1) << 32

// Personality values (linux/personality.h; not in x/sys/unix).
const (
	perLinux32       = 0x0008
	perBSD           = 0x0006
	uname26          = 0x0020000
	addrNoRandomize  = 0x0040000
	mmapPageZero     = 0x0100000
	personalityQuery = 0xffffffff
)

// seccompTable is every conditional rule, each with its high-bit variant:
// the system call, its arguments, and what the filter returns.
var seccompTable = []struct {
	name string
	call string
	args []uint64
	want uint32
}{
	// socket: an allowlist of families, on the low 32 bits of the domain.
	{"socket(AF_INET)", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM}, retAllow},
	{"socket(AF_INET6)", "socket", []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, retAllow},
	{"socket(AF_INET, SOCK_RAW)", "socket", []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, retAllow},
	{"socket(AF_INET) with high bits", "socket", []uint64{hi | unix.AF_INET, unix.SOCK_STREAM}, retAllow},
	{"socket(AF_INET6) with high bits", "socket", []uint64{hi | unix.AF_INET6, unix.SOCK_STREAM}, retAllow},
	{"socket(AF_NETLINK, NETLINK_ROUTE)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, retAllow},
	{"socket(AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_ROUTE}, retAllow},
	{"socket(AF_NETLINK) with high bits, NETLINK_ROUTE", "socket", []uint64{hi | unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, retAllow},
	{"socket(AF_NETLINK, NETLINK_ROUTE with high bits)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, hi | unix.NETLINK_ROUTE}, retAllow},
	{"socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_KOBJECT_UEVENT}, retEPERM},
	{"socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT with high bits)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, hi | unix.NETLINK_KOBJECT_UEVENT}, retEPERM},
	{"socket(AF_NETLINK, NETLINK_SOCK_DIAG)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG}, retEPERM},
	{"socket(AF_NETLINK, NETLINK_AUDIT)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, retEPERM},
	{"socket(AF_NETLINK, NETLINK_GENERIC)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC}, retEPERM},
	{"socket(AF_NETLINK, NETLINK_NETFILTER)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER}, retEPERM},
	{"socket(AF_NETLINK, NETLINK_XFRM)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_XFRM}, retEPERM},
	{"socket(AF_UNIX)", "socket", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retEPERM},
	{"socket(AF_UNIX, SOCK_DGRAM)", "socket", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, retEPERM},
	{"socket(AF_UNIX) with high bits", "socket", []uint64{hi | unix.AF_UNIX, unix.SOCK_STREAM}, retEPERM},
	{"socket(AF_UNIX) with AF_INET in the high bits", "socket", []uint64{unix.AF_INET<<32 | unix.AF_UNIX, unix.SOCK_STREAM}, retEPERM},
	{"socket(AF_VSOCK)", "socket", []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, retEPERM},
	{"socket(AF_VSOCK) with high bits", "socket", []uint64{hi | unix.AF_VSOCK, unix.SOCK_STREAM}, retEPERM},
	{"socket(AF_PACKET)", "socket", []uint64{unix.AF_PACKET, unix.SOCK_RAW}, retEPERM},
	{"socket(AF_PACKET) with high bits", "socket", []uint64{hi | unix.AF_PACKET, unix.SOCK_RAW}, retEPERM},
	{"socket(AF_ALG)", "socket", []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET}, retEPERM},
	{"socket(AF_BLUETOOTH)", "socket", []uint64{unix.AF_BLUETOOTH, unix.SOCK_RAW}, retEPERM},
	{"socket(AF_XDP)", "socket", []uint64{unix.AF_XDP, unix.SOCK_RAW}, retEPERM},
	{"socket(AF_KEY)", "socket", []uint64{unix.AF_KEY, unix.SOCK_RAW}, retEPERM},
	{"socket(AF_CAN)", "socket", []uint64{unix.AF_CAN, unix.SOCK_RAW}, retEPERM},
	{"socket(AF_TIPC)", "socket", []uint64{unix.AF_TIPC, unix.SOCK_RDM}, retEPERM},
	{"socket(AF_RDS)", "socket", []uint64{unix.AF_RDS, unix.SOCK_SEQPACKET}, retEPERM},
	{"socket(AF_UNSPEC)", "socket", []uint64{unix.AF_UNSPEC, unix.SOCK_STREAM}, retEPERM},

	// socketpair: AF_UNIX stream and seqpacket pairs only.
	{"socketpair(AF_UNIX, SOCK_STREAM)", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retAllow},
	{"socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK)", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK}, retAllow},
	{"socketpair(AF_UNIX, SOCK_SEQPACKET)", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, retAllow},
	{"socketpair(AF_UNIX) with high bits", "socketpair", []uint64{hi | unix.AF_UNIX, unix.SOCK_STREAM}, retAllow},
	{"socketpair(AF_UNIX, SOCK_STREAM with high bits)", "socketpair", []uint64{unix.AF_UNIX, hi | unix.SOCK_STREAM}, retAllow},
	{"socketpair(AF_UNIX, SOCK_DGRAM)", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, retEPERM},
	{"socketpair(AF_UNIX, SOCK_DGRAM|SOCK_CLOEXEC)", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}, retEPERM},
	{"socketpair(AF_UNIX, SOCK_DGRAM with high bits)", "socketpair", []uint64{unix.AF_UNIX, hi | unix.SOCK_DGRAM}, retEPERM},
	{"socketpair(AF_UNIX, SOCK_RAW)", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_RAW}, retEPERM},
	{"socketpair(AF_INET)", "socketpair", []uint64{unix.AF_INET, unix.SOCK_STREAM}, retEPERM},
	{"socketpair(AF_INET) with high bits", "socketpair", []uint64{hi | unix.AF_INET, unix.SOCK_STREAM}, retEPERM},
	{"socketpair(AF_VSOCK)", "socketpair", []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, retEPERM},

	// ioctl: TIOCSTI and TIOCLINUX, on the low 32 bits of the request.
	{"ioctl(TIOCSTI)", "ioctl", []uint64{0, unix.TIOCSTI}, retEPERM},
	{"ioctl(TIOCSTI) with high bits", "ioctl", []uint64{0, hi | unix.TIOCSTI}, retEPERM},
	{"ioctl(TIOCSTI) with all high bits", "ioctl", []uint64{0, 0xffffffff<<32 | unix.TIOCSTI}, retEPERM},
	{"ioctl(TIOCLINUX)", "ioctl", []uint64{0, unix.TIOCLINUX}, retEPERM},
	{"ioctl(TIOCLINUX) with high bits", "ioctl", []uint64{0, hi | unix.TIOCLINUX}, retEPERM},
	{"ioctl(TCGETS)", "ioctl", []uint64{0, unix.TCGETS}, retAllow},
	{"ioctl(TCGETS) with high bits", "ioctl", []uint64{0, hi | unix.TCGETS}, retAllow},
	{"ioctl(TIOCSTI) as fd, TCGETS", "ioctl", []uint64{unix.TIOCSTI, unix.TCGETS}, retAllow},

	// unshare and clone: no CLONE_NEW* flag, on the low 32 bits.
	{"unshare(CLONE_NEWUSER)", "unshare", []uint64{unix.CLONE_NEWUSER}, retEPERM},
	{"unshare(CLONE_NEWUSER) with high bits", "unshare", []uint64{hi | unix.CLONE_NEWUSER}, retEPERM},
	{"unshare(CLONE_NEWNET|CLONE_FILES)", "unshare", []uint64{unix.CLONE_NEWNET | unix.CLONE_FILES}, retEPERM},
	{"unshare(CLONE_NEWTIME)", "unshare", []uint64{unix.CLONE_NEWTIME}, retEPERM},
	{"unshare(CLONE_NEWNS) with high bits", "unshare", []uint64{hi | unix.CLONE_NEWNS}, retEPERM},
	{"unshare(CLONE_FILES)", "unshare", []uint64{unix.CLONE_FILES}, retAllow},
	{"unshare(CLONE_FILES) with high bits", "unshare", []uint64{hi | unix.CLONE_FILES}, retAllow},
	{"clone(SIGCHLD)", "clone", []uint64{uint64(unix.SIGCHLD)}, retAllow},
	{"clone(SIGCHLD) with high bits", "clone", []uint64{hi | uint64(unix.SIGCHLD)}, retAllow},
	{"clone(thread)", "clone", []uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM}, retAllow},
	{"clone(CLONE_NEWUSER)", "clone", []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, retEPERM},
	{"clone(CLONE_NEWUSER) with high bits", "clone", []uint64{hi | unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, retEPERM},
	{"clone(CLONE_NEWPID)", "clone", []uint64{unix.CLONE_NEWPID}, retEPERM},
	{"clone(CLONE_NEWNET) with high bits", "clone", []uint64{hi | unix.CLONE_NEWNET}, retEPERM},
	// The kernel takes clone's flags from the low 32 bits: CLONE_NEWUSER
	// in the high bits alone is an ordinary fork.
	{"clone(SIGCHLD) with CLONE_NEWUSER in the high bits", "clone", []uint64{unix.CLONE_NEWUSER<<32 | uint64(unix.SIGCHLD)}, retAllow},
	{"clone3", "clone3", nil, retENOSYS},

	// personality: Docker's values and ADDR_NO_RANDOMIZE, on the low 32 bits.
	{"personality(PER_LINUX)", "personality", []uint64{0}, retAllow},
	{"personality(query)", "personality", []uint64{personalityQuery}, retAllow},
	{"personality(PER_LINUX32)", "personality", []uint64{perLinux32}, retAllow},
	{"personality(UNAME26)", "personality", []uint64{uname26}, retAllow},
	{"personality(UNAME26|PER_LINUX32)", "personality", []uint64{uname26 | perLinux32}, retAllow},
	{"personality(ADDR_NO_RANDOMIZE)", "personality", []uint64{addrNoRandomize}, retAllow},
	{"personality(ADDR_NO_RANDOMIZE|PER_LINUX32)", "personality", []uint64{addrNoRandomize | perLinux32}, retAllow},
	{"personality(PER_LINUX) with high bits", "personality", []uint64{hi}, retAllow},
	{"personality(query) with high bits", "personality", []uint64{hi | personalityQuery}, retAllow},
	{"personality(READ_IMPLIES_EXEC)", "personality", []uint64{readImpliesExec}, retEPERM},
	{"personality(READ_IMPLIES_EXEC) with high bits", "personality", []uint64{hi | readImpliesExec}, retEPERM},
	{"personality(MMAP_PAGE_ZERO)", "personality", []uint64{mmapPageZero}, retEPERM},
	{"personality(PER_BSD)", "personality", []uint64{perBSD}, retEPERM},
	{"personality(PER_BSD) with high bits", "personality", []uint64{hi | perBSD}, retEPERM},
	{"personality(0xfffffffe)", "personality", []uint64{0xfffffffe}, retEPERM},

	// The mode of a file made or changed: no S_ISUID, no S_ISGID (umode_t:
	// the kernel reads the low 16 bits).
	{"fchmod(0755)", "fchmod", []uint64{3, 0o755}, retAllow},
	{"fchmod(01777)", "fchmod", []uint64{3, 0o1777}, retAllow},
	{"fchmod(04755)", "fchmod", []uint64{3, 0o4755}, retEPERM},
	{"fchmod(02755)", "fchmod", []uint64{3, 0o2755}, retEPERM},
	{"fchmod(04755) with high bits", "fchmod", []uint64{3, hi | 0o4755}, retEPERM},
	{"fchmodat(04755)", "fchmodat", []uint64{atFDCWD, 0, 0o4755}, retEPERM},
	{"fchmodat(0644)", "fchmodat", []uint64{atFDCWD, 0, 0o644}, retAllow},
	{"fchmodat2(06755)", "fchmodat2", []uint64{atFDCWD, 0, 0o6755, 0}, retEPERM},
	{"fchmodat2(0755)", "fchmodat2", []uint64{atFDCWD, 0, 0o755, 0}, retAllow},
	{"mknodat(S_IFREG|04755)", "mknodat", []uint64{atFDCWD, 0, unix.S_IFREG | 0o4755, 0}, retEPERM},
	{"mknodat(S_IFIFO|0644)", "mknodat", []uint64{atFDCWD, 0, unix.S_IFIFO | 0o644, 0}, retAllow},
	{"openat(O_CREAT, 04755)", "openat", []uint64{atFDCWD, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, retEPERM},
	{"openat(O_CREAT, 02755) with high bits", "openat", []uint64{atFDCWD, 0, unix.O_CREAT, hi | 0o2755}, retEPERM},
	{"openat(O_CREAT with high bits, 04755)", "openat", []uint64{atFDCWD, 0, hi | unix.O_CREAT, 0o4755}, retEPERM},
	{"openat(O_TMPFILE, 04755)", "openat", []uint64{atFDCWD, 0, unix.O_TMPFILE | unix.O_RDWR, 0o4755}, retEPERM},
	{"openat(O_CREAT, 0644)", "openat", []uint64{atFDCWD, 0, unix.O_CREAT | unix.O_WRONLY, 0o644}, retAllow},
	{"openat(O_RDONLY, junk mode 04755)", "openat", []uint64{atFDCWD, 0, unix.O_RDONLY, 0o4755}, retAllow},
	{"openat2", "openat2", nil, retENOSYS},

	{"read", "read", nil, retAllow},
	{"execve", "execve", nil, retAllow},
	{"openat", "openat", nil, retAllow},
	{"set_mempolicy", "set_mempolicy", nil, retAllow},
}

// newlyDenied are the calls the audit against Docker's default profile and
// sandbox-runtime added (seccomppolicy's table says why each).
var newlyDenied = []string{
	"pidfd_getfd", "kcmp", "process_madvise", "process_mrelease", "migrate_pages", "move_pages",
	"open_by_handle_at", "name_to_handle_at", "quotactl", "quotactl_fd", "swapon", "swapoff",
	"reboot", "acct", "syslog", "vhangup", "fanotify_init", "lookup_dcookie", "settimeofday", "clock_settime",
}

// newlyDeniedX86_64 are those of x86_64 only.
var newlyDeniedX86_64 = []string{"iopl", "ioperm", "uselib", "_sysctl"}

// atFDCWD is AT_FDCWD as a system call argument.
const atFDCWD = uint64(0xffffffffffffff9c)
