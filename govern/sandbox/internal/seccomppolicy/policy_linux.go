package seccomppolicy

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The policy, one decision per row: allow by default, and decide these.
// Audited against Docker's default profile (moby profiles/seccomp/default.json)
// and Anthropic's sandbox-runtime (vendor/seccomp-src). The command has no
// capabilities and its own user, network, IPC, UTS and PID namespaces, so a
// capability-gated call fails anyway: denying it keeps its kernel code out of
// reach. Every argument is compared on its low 32 bits: the kernel reads
// int and unsigned int arguments on them (and clone's flags; unshare
// refuses high bits with EINVAL), so a 64-bit comparison is bypassed by
// setting a high bit (socket((1<<32)|AF_UNIX) passed the library's filter).
//
//	call                          decision                         why
//	socket                        AF_INET, AF_INET6, and           AF_UNIX reaches host sockets on visible paths (a
//	                              AF_NETLINK with NETLINK_ROUTE;   Docker socket is root); AF_VSOCK is not confined
//	                              any other family EPERM           by the network namespace; NETLINK_ROUTE serves
//	                                                               glibc's getaddrinfo/getifaddrs and Node's
//	                                                               os.networkInterfaces, and sees only the sandbox's
//	                                                               namespace; the rest (AF_PACKET, AF_ALG, AF_XDP,
//	                                                               AF_KEY, AF_BLUETOOTH, other netlink protocols…)
//	                                                               is attack surface no build tool needs
//	                                                               (Options.UnixSockets adds AF_UNIX: the agent
//	                                                               launcher's sandbox; see Options)
//	socketpair                    AF_UNIX SOCK_STREAM and          libuv, Python and ssh use stream pairs; a
//	                              SOCK_SEQPACKET; else EPERM       datagram pair can be connect()ed to any host
//	                                                               datagram socket on a visible path
//	ioctl                         TIOCSTI, TIOCLINUX EPERM         typing into, or pasting from, a terminal
//	unshare, clone                any CLONE_NEW* flag EPERM        no nested namespaces (CLONE_NEWTIME's bit is
//	                                                               clone's exit signal, so unshare only)
//	clone3                        ENOSYS                           its flags are in memory the filter cannot read;
//	                                                               libc falls back to clone
//	personality                   PER_LINUX, PER_LINUX32, UNAME26, Docker's values, plus ADDR_NO_RANDOMIZE (gdb,
//	                              ADDR_NO_RANDOMIZE, combined, and setarch -R), which weakens only the caller's own
//	                              the query; else EPERM            layout; other execution domains and
//	                                                               READ_IMPLIES_EXEC, MMAP_PAGE_ZERO are refused
//	chmod fchmod fchmodat         a mode with S_ISUID or S_ISGID   the workspace is the host's: a set-user-ID file
//	  fchmodat2 creat mknod         EPERM (open, openat: only when   made there runs as its owner for whoever on the
//	  mknodat open openat           O_CREAT or O_TMPFILE is set)     host executes it, and its owner is the sandbox's
//	                                                               uid (run_as's, outside every sandbox; the host's
//	                                                               root when root runs mitrity-sandboxrun without
//	                                                               run_as); nosuid holds only inside the sandbox
//	openat2                       ENOSYS                           its mode is in memory the filter cannot read;
//	                                                               libc's open does not use it
//	io_uring_*                    EPERM                            its operations (sockets included) bypass the filter
//	setns mount umount2           EPERM                            no namespace or mount changes
//	  pivot_root open_tree
//	  move_mount fsopen fsconfig
//	  fsmount fspick mount_setattr
//	ptrace process_vm_readv       EPERM                            no access to another process: its memory, its
//	  process_vm_writev kcmp                                       descriptors (pidfd_getfd), its address space
//	  pidfd_getfd process_madvise                                  (process_madvise, process_mrelease, page
//	  process_mrelease                                             migration), the kernel's pointer order (kcmp)
//	  migrate_pages move_pages
//	keyctl add_key request_key    EPERM                            keyrings are not namespaced
//	bpf perf_event_open           EPERM                            kernel attack surface, host-wide observation
//	  userfaultfd fanotify_init
//	kexec_load kexec_file_load    EPERM                            capability-gated, host-wide
//	  init_module finit_module
//	  delete_module reboot swapon
//	  swapoff acct quotactl
//	  quotactl_fd vhangup
//	  settimeofday clock_settime
//	  lookup_dcookie
//	syslog                        EPERM                            the kernel log, readable when dmesg_restrict=0
//	open_by_handle_at             EPERM                            open_by_handle_at opens any file of a mounted
//	  name_to_handle_at                                            file system by handle, around the mounts
//	                                                               ("shocker"); the handle is of no other use here
//	iopl ioperm uselib _sysctl    EPERM                            x86_64 only: port I/O, a.out libraries, the
//	                                                               removed sysctl call
//	any other architecture        kill                             i386 (int 0x80) and AArch32 numbers differ, and
//	                                                               i386 socketcall hides socket's arguments
//	x32 ABI (nr ≥ 0x40000000)     ENOSYS                           the same calls by other numbers
//	allowed, considered           allow                            modify_ldt (Docker allows it; wine), mbind
//	                                                               set_mempolicy (the caller's own memory), chroot
//	                                                               sethostname setdomainname (capability-gated, own
//	                                                               UTS namespace), adjtimex clock_adjtime (reads;
//	                                                               writes are capability-gated), seccomp landlock
//	                                                               (only restrict), ustat sysfs (obsolete reads);
//	                                                               nfsservctl, create_module and the like are gone
//	                                                               from the kernel (ENOSYS)
var (
	// DeniedSyscalls fail with EPERM whatever their arguments, on every
	// architecture.
	DeniedSyscalls = []string{
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"setns", "mount", "umount2", "pivot_root",
		"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
		"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
		"process_madvise", "process_mrelease", "migrate_pages", "move_pages",
		"keyctl", "add_key", "request_key",
		"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "vhangup",
		"settimeofday", "clock_settime", "lookup_dcookie", "syslog",
		"open_by_handle_at", "name_to_handle_at",
	}
	// deniedOn are the denied calls that exist on one architecture only.
	deniedOn = map[string][]string{
		arch.X86_64.Name: {"iopl", "ioperm", "uselib", "_sysctl"},
	}
)

// Arguments of the conditional rules.
var (
	socketFamilies  = []uint32{unix.AF_INET, unix.AF_INET6}
	socketpairTypes = []uint32{unix.SOCK_STREAM, unix.SOCK_SEQPACKET}
	ioctlDenied     = []uint32{unix.TIOCSTI, unix.TIOCLINUX}
)

// setIDModeArgs are the calls that give a file its mode, with the index of
// the mode argument and, for open and openat, of the flags that make the
// mode count (O_CREAT, O_TMPFILE; -1: always). Those missing from an
// architecture (arm64 has no chmod, creat, mknod, open) are skipped.
var setIDModeArgs = []struct {
	call        string
	mode, flags int
}{
	{"chmod", 1, -1}, {"fchmod", 1, -1}, {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
	{"creat", 1, -1}, {"mknod", 1, -1}, {"mknodat", 2, -1},
	{"open", 2, 1}, {"openat", 3, 2},
}

const (
	// modeSetID are the mode bits refused: S_ISUID, S_ISGID.
	modeSetID = unix.S_ISUID | unix.S_ISGID
	// openCreates are the open flags under which the mode is used:
	// O_CREAT and O_TMPFILE's own bit (without O_DIRECTORY).
	openCreates = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)
)

// Namespace flags: unshare may not use any; clone may not use those that
// fit its flags word (CLONE_NEWTIME's bit is the exit signal there).
const (
	cloneNewMask   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNewMask = cloneNewMask | unix.CLONE_NEWTIME
)

// Personality values (linux/personality.h): the flags allowed, alone or
// together, and the query, which changes nothing.
const (
	personalityAllowed = 0x0008 | 0x0020000 | 0x0040000 // PER_LINUX32 | UNAME26 | ADDR_NO_RANDOMIZE
	personalityQuery   = 0xffffffff
	sockTypeMask       = 0xf // SOCK_TYPE_MASK: the type without SOCK_CLOEXEC, SOCK_NONBLOCK
)

// struct seccomp_data: nr, arch, instruction_pointer, then args[6], __u64
// each in the architecture's byte order.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
	// auditArchLE is __AUDIT_ARCH_LE (linux/audit.h), set in the audit
	// architecture of every little-endian ABI.
	auditArchLE = 0x40000000
)

// What the filter returns.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// Denied returns the calls a's filter fails with EPERM whatever their
// arguments.
func Denied(a *arch.Info) []string {
	return append(slices.Clone(DeniedSyscalls), deniedOn[a.Name]...)
}

// Options vary the policy for a sandbox that is not a governed command's.
type Options struct {
	// UnixSockets lets socket(2) create AF_UNIX sockets: the agent
	// launcher's posture, whose file system shows no host path but the
	// ones it binds (the admission socket among them), and whose network
	// namespace hides the host's abstract sockets. Every other rule holds.
	UnixSockets bool
}

// Program assembles the filter for the running architecture.
func Program() ([]bpf.RawInstruction, error) { return ProgramWith(Options{}) }

// ProgramWith assembles the filter with o for the running architecture.
func ProgramWith(o Options) ([]bpf.RawInstruction, error) {
	a, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return ProgramForWith(a, o)
}

// ProgramFor assembles the filter for architecture a: kill any other
// architecture's calls, ENOSYS for the x32 ABI, then the rules of the
// table above, each argument loaded from its low 32 bits.
func ProgramFor(a *arch.Info) ([]bpf.RawInstruction, error) { return ProgramForWith(a, Options{}) }

// ProgramForWith is ProgramFor with o.
func ProgramForWith(a *arch.Info, o Options) ([]bpf.RawInstruction, error) {
	var missing []string
	nr := func(name string) uint32 {
		n, ok := a.SyscallNames[name]
		if !ok {
			missing = append(missing, name)
		}
		return uint32(n)
	}
	lo := func(i int) bpf.Instruction {
		off := offArgs + 8*i
		if uint32(a.ID)&auditArchLE == 0 {
			off += 4
		}
		return bpf.LoadAbsolute{Off: uint32(off), Size: 4}
	}
	p := newAsm()

	p.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	p.jump(bpf.JumpEqual, uint32(a.ID), "native", "")
	p.ret(retKill)
	p.label("native")
	p.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	if a.ID == arch.X86_64.ID {
		p.jump(bpf.JumpGreaterOrEqual, uint32(arch.X32.SeccompMask), "", "x86_64")
		p.ret(retNOSYS)
		p.label("x86_64")
	}

	// Each rule starts at the call's number and ends in a return (a body
	// that falls through denies); other calls skip it with the number still
	// loaded.
	rule := func(name string, body func(allow, deny string)) {
		p.jump(bpf.JumpEqual, nr(name), "", name+".next")
		body(name+".allow", name+".deny")
		p.label(name + ".deny")
		p.ret(retEPERM)
		p.label(name + ".allow")
		p.ret(retAllow)
		p.label(name + ".next")
	}
	rule("socket", func(allow, deny string) {
		p.emit(lo(0))
		families := socketFamilies
		if o.UnixSockets {
			families = append(slices.Clone(families), unix.AF_UNIX)
		}
		for _, f := range families {
			p.jump(bpf.JumpEqual, f, allow, "")
		}
		p.jump(bpf.JumpEqual, unix.AF_NETLINK, "", deny)
		p.emit(lo(2))
		p.jump(bpf.JumpEqual, unix.NETLINK_ROUTE, allow, deny)
	})
	rule("socketpair", func(allow, deny string) {
		p.emit(lo(0))
		p.jump(bpf.JumpEqual, unix.AF_UNIX, "", deny)
		p.emit(lo(1), bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask})
		for _, t := range socketpairTypes {
			p.jump(bpf.JumpEqual, t, allow, "")
		}
	})
	rule("ioctl", func(allow, deny string) {
		p.emit(lo(1))
		for _, req := range ioctlDenied {
			p.jump(bpf.JumpEqual, req, deny, "")
		}
		p.goTo(allow)
	})
	rule("unshare", func(allow, deny string) {
		p.emit(lo(0))
		p.jump(bpf.JumpBitsSet, unshareNewMask, deny, allow)
	})
	rule("clone", func(allow, deny string) {
		p.emit(lo(0))
		p.jump(bpf.JumpBitsSet, cloneNewMask, deny, allow)
	})
	rule("personality", func(allow, deny string) {
		p.emit(lo(0))
		p.jump(bpf.JumpEqual, personalityQuery, allow, "")
		p.jump(bpf.JumpBitsSet, ^uint32(personalityAllowed), deny, allow)
	})

	for _, m := range setIDModeArgs {
		if _, ok := a.SyscallNames[m.call]; !ok {
			continue
		}
		rule(m.call, func(allow, deny string) {
			if m.flags >= 0 {
				p.emit(lo(m.flags))
				p.jump(bpf.JumpBitsSet, openCreates, "", allow)
			}
			p.emit(lo(m.mode))
			p.jump(bpf.JumpBitsSet, modeSetID, deny, allow)
		})
	}

	for _, name := range Denied(a) {
		p.jump(bpf.JumpEqual, nr(name), "deny", "")
	}
	p.jump(bpf.JumpEqual, nr("clone3"), "enosys", "")
	p.jump(bpf.JumpEqual, nr("openat2"), "enosys", "")
	p.ret(retAllow)
	p.label("deny")
	p.ret(retEPERM)
	p.label("enosys")
	p.ret(retNOSYS)

	if len(missing) > 0 {
		return nil, fmt.Errorf("seccomp: %s has no %v", a.Name, missing)
	}
	return p.assemble()
}

// Bytes is Program as bubblewrap's --seccomp reads it: struct sock_filter
// entries in native byte order.
func Bytes() ([]byte, error) { return BytesWith(Options{}) }

// BytesWith is Bytes with o.
func BytesWith(o Options) ([]byte, error) {
	raw, err := ProgramWith(o)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		b = binary.NativeEndian.AppendUint16(b, r.Op)
		b = append(b, r.Jt, r.Jf)
		b = binary.NativeEndian.AppendUint32(b, r.K)
	}
	return b, nil
}
