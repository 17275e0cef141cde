package initproc

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// auditArch is seccomp_data.arch for the architecture init runs on.
func auditArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("no exec guard for %s", runtime.GOARCH)
}

// guardProgram hands execve and execveat to the supervisor (user
// notification) and allows everything else; a call of another
// architecture is allowed here, since bubblewrap's filter kills it first.
func guardProgram(arch uint32) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	return []unix.SockFilter{
		{Code: ld, K: 4}, // seccomp_data.arch
		{Code: jeq, Jt: 0, Jf: 3, K: arch},
		{Code: ld, K: 0}, // seccomp_data.nr
		{Code: jeq, Jt: 2, Jf: 0, K: unix.SYS_EXECVE},
		{Code: jeq, Jt: 1, Jf: 0, K: unix.SYS_EXECVEAT},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: unix.SECCOMP_RET_USER_NOTIF},
	}
}

// installExecGuard makes every execve and execveat of this process and
// what it starts wait for the supervisor, which reads the argument vector
// and refuses one that carries a credential injected into the run
// (EPERM). The listener goes to the supervisor on the socketpair end fd
// before init execs the command (whose own execve is the first one the
// supervisor sees). The filter is on the calling thread, the one that
// execs: init is locked to it, and execve keeps that thread's filters.
func installExecGuard(fd int) error {
	defer unix.Close(fd)
	arch, err := auditArch()
	if err != nil {
		return err
	}
	prog := guardProgram(arch)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	listener, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("installing the exec guard: %w", errno)
	}
	defer unix.Close(int(listener))
	if err := unix.Sendmsg(fd, []byte{'G'}, unix.UnixRights(int(listener)), nil, 0); err != nil {
		return fmt.Errorf("handing the exec guard out: %w", err)
	}
	return nil
}
