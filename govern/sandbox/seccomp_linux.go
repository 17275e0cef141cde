package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

//go:generate go run ./internal/seccompgen

// programBytes is the seccomp program (see internal/seccomppolicy) as
// bubblewrap's --seccomp reads it: struct sock_filter entries in native
// byte order. The returned slice is shared: it must not be changed.
func programBytes() ([]byte, error) {
	if nativeProgram == nil {
		return nil, fmt.Errorf("seccomp: no program for %s", runtime.GOARCH)
	}
	return nativeProgram, nil
}

// filterProgram returns the program in the kernel's layout.
func filterProgram() ([]unix.SockFilter, error) {
	b, err := programBytes()
	if err != nil {
		return nil, err
	}
	filter := make([]unix.SockFilter, 0, len(b)/8)
	for i := 0; i+8 <= len(b); i += 8 {
		filter = append(filter, unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b[i:]), Jt: b[i+2], Jf: b[i+3], K: binary.NativeEndian.Uint32(b[i+4:]),
		})
	}
	return filter, nil
}

// loadFilter sets no_new_privs and loads prog on every thread of the
// calling process (TSYNC); the filter survives execve and is inherited by
// every child.
func loadFilter(prog []unix.SockFilter) error {
	if len(prog) == 0 {
		return fmt.Errorf("seccomp: empty program")
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	r1, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno != 0:
		return fmt.Errorf("seccomp: loading the filter: %w", errno)
	case r1 != 0:
		return fmt.Errorf("seccomp: thread %d could not be synchronised to the filter", r1)
	}
	return nil
}
