package pollfd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockedIn is the kernel functions this process's threads sleep in
// (/proc/self/task/*/wchan).
func blockedIn(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("/proc/self/task/*/wchan")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// eventually polls the threads' wait channels until want(channels) holds.
func eventually(t *testing.T, want func([]string) bool) []string {
	t.Helper()
	var got []string
	for range 200 {
		if got = blockedIn(t); want(got) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	return got
}

// checkHeld checks that a thread sleeps where in says when the wait is
// not polled (the control: eventually), and that none does when it is
// (after a moment to get there).
func checkHeld(t *testing.T, polled bool, in func([]string) bool) {
	t.Helper()
	var got []string
	if polled {
		time.Sleep(200 * time.Millisecond)
		got = blockedIn(t)
	} else {
		got = eventually(t, in)
	}
	if in(got) == polled {
		t.Errorf("polled=%v: threads sleep in %q", polled, got)
	}
}

func TestPollablePipe(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	std := os.NewFile(uintptr(p[0]), "blocking") // a blocking pipe, as stdin is
	if err := std.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("a blocking pipe takes deadlines (%v): the check below cannot tell", err)
	}
	f := pollable(std, p[0], "pipe")
	defer runtime.KeepAlive(std) // collected, it would close the descriptor
	if f == std {
		t.Fatal("a pipe was not made pollable")
	}
	if err := f.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("not in the poller: %v", err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want the deadline", err)
	}
	f.SetReadDeadline(time.Time{})
	go unix.Write(p[1], []byte("x\n"))
	b := make([]byte, 2)
	if n, err := f.Read(b); err != nil || string(b[:n]) != "x\n" {
		t.Fatalf("read %q, %v", b[:n], err)
	}
}

// TestRestore: the description pollable made non-blocking, which the
// process that started this one may share (here: a second descriptor for
// it), is blocking again after Restore.
func TestRestore(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	shared, err := unix.Dup(p[0])
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(shared)
	nonblocking := func() bool {
		fl, err := unix.FcntlInt(uintptr(shared), unix.F_GETFL, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fl&unix.O_NONBLOCK != 0
	}
	std := os.NewFile(uintptr(p[0]), "blocking")
	defer runtime.KeepAlive(std)
	f := pollable(std, p[0], "pipe")
	defer runtime.KeepAlive(f)
	if f == std || !nonblocking() {
		t.Fatal("the pipe was not made non-blocking: the check below cannot tell")
	}
	Restore()
	if nonblocking() {
		t.Error("the shared description is still non-blocking after Restore")
	}
}

// TestPollableHoldsNoThread: a read of an idle pipe through pollable
// leaves no thread asleep in pipe_read; through the blocking file it does,
// which shows the check can tell.
func TestPollableHoldsNoThread(t *testing.T) {
	inRead := func(ch []string) bool { // pipe_read, anon_pipe_read (6.x)
		return slices.ContainsFunc(ch, func(w string) bool { return strings.HasSuffix(w, "pipe_read") })
	}
	for _, polled := range []bool{false, true} {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		std := os.NewFile(uintptr(p[0]), "blocking")
		f := std
		if polled {
			f = pollable(std, p[0], "polled")
		}
		done := make(chan error, 1)
		go func() {
			_, err := f.Read(make([]byte, 1))
			done <- err
		}()
		checkHeld(t, polled, inRead)
		unix.Write(p[1], []byte("x"))
		if err := <-done; err != nil {
			t.Errorf("polled=%v: read: %v", polled, err)
		}
		unix.Close(p[1])
		f.Close()
		runtime.KeepAlive(std) // collected, it would close the descriptor
	}
}

// TestPollableLeavesPolledAlone: a pipe that was non-blocking from the
// start is in the poller through its own file already; pollable returns
// that file, not a second one the poller would refuse.
func TestPollableLeavesPolledAlone(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	std := os.NewFile(uintptr(p[0]), "nonblocking")
	defer std.Close()
	if got := pollable(std, p[0], "again"); got != std {
		t.Fatal("a polled pipe got a second file")
	}
	go unix.Write(p[1], []byte("x"))
	if n, err := std.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("read: %d, %v", n, err)
	}
}

func TestPollableLeavesFilesAlone(t *testing.T) {
	std, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer std.Close()
	if got := pollable(std, int(std.Fd()), "null"); got != std {
		t.Fatal("a character device was made non-blocking")
	}
}

// TestAwaitExitHoldsNoThread: while AwaitExit waits for a child, no thread
// sleeps in waitid (do_wait); the same wait through Wait alone does, which
// shows the check can tell.
func TestAwaitExitHoldsNoThread(t *testing.T) {
	inWait := func(ch []string) bool { return slices.Contains(ch, "do_wait") }
	for _, polled := range []bool{false, true} {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			if polled {
				AwaitExit(cmd.Process)
			}
			done <- cmd.Wait()
		}()
		checkHeld(t, polled, inWait)
		select {
		case err := <-done:
			t.Fatalf("polled=%v: the wait ended before the child: %v", polled, err)
		default:
		}
		cmd.Process.Kill()
		select {
		case err := <-done:
			if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
				t.Errorf("polled=%v: %v, state %v", polled, err, cmd.ProcessState)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("polled=%v: the wait did not end after the child was killed", polled)
		}
	}
}

// TestAwaitExitAfterExit: a child that has already exited (a zombie) is
// awaited at once.
func TestAwaitExitAfterExit(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { AwaitExit(cmd.Process); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitExit did not see an exited child")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
