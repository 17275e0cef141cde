package seccomppolicy

import (
	"encoding/binary"
	"fmt"
	"runtime"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// DeniedSyscalls fail with EPERM whatever their arguments: namespace and
// mount manipulation, tracing and cross-process memory access, kernel
// keyrings, BPF, perf, userfaultfd, kexec and kernel modules, io_uring
// (whose operations a filter cannot see).
var DeniedSyscalls = []string{
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"setns", "mount", "umount2", "pivot_root",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
}

// Namespace flags: unshare may not use any; clone may not use those that
// fit its flags word (CLONE_NEWTIME's bit is the exit signal there).
const (
	cloneNewMask   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNewMask = cloneNewMask | unix.CLONE_NEWTIME
)

// errnoAction returns the filter action that fails a call with errno.
func errnoAction(errno unix.Errno) seccomp.Action {
	return seccomp.ActionErrno | seccomp.Action(errno)
}

// Policy is the seccomp policy installed on the command: allow by
// default, deny the calls above, socket(AF_UNIX) (socketpair stays), new
// namespaces through unshare or clone, TIOCSTI, and clone3 with ENOSYS so
// that libc falls back to clone, whose flags the filter can read.
func Policy() seccomp.Policy {
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{
				Action: errnoAction(unix.EPERM),
				Names:  DeniedSyscalls,
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}}},
					{Name: "unshare", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: unshareNewMask}}},
					{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNewMask}}},
					{Name: "ioctl", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: unix.TIOCSTI}}},
				},
			},
			{Action: errnoAction(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
}

// Program assembles the filter for the running architecture. The library's
// program lets a foreign architecture's calls through (an x86_64 process
// can still issue i386 calls through int 0x80, where socketcall bypasses a
// socket rule), so the program is prefixed with a check that kills the
// process on any architecture but the native one.
func Program() ([]bpf.RawInstruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %s: %w", runtime.GOARCH, err)
	}
	p := Policy()
	insts, err := p.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assembling the policy: %w", err)
	}
	prefix := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	raw, err := bpf.Assemble(append(prefix, insts...))
	if err != nil {
		return nil, fmt.Errorf("seccomp: assembling BPF: %w", err)
	}
	return raw, nil
}

// Bytes is Program as bubblewrap's --seccomp reads it: struct sock_filter
// entries in native byte order.
func Bytes() ([]byte, error) {
	raw, err := Program()
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
