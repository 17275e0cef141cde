package audit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// eventRoom is what the service reserves before a forwarded call.
const eventRoom = MaxUpstreamEventBytes

// reserve is w.Reserve(n) for a test that only needs it to succeed or
// fail: the room is released at the end of the test.
func reserve(t *testing.T, w *Writer, n int64) error {
	t.Helper()
	r, err := w.Reserve(n)
	t.Cleanup(r.Release)
	return err
}

func TestReserve(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	defer w.Close()
	b := testBuilder()
	assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
	before, err := os.Stat(path)
	assert.NilError(t, err)

	for range 3 {
		assert.NilError(t, reserve(t, w, eventRoom))
	}
	after, err := os.Stat(path)
	assert.NilError(t, err)
	// The room is set aside past the end: every reader sees the same file.
	assert.Equal(t, after.Size(), before.Size())
	if st, ok := after.Sys().(*syscall.Stat_t); ok && st.Blocks*512 < eventRoom {
		// A filesystem without fallocate gets the other checks only.
		t.Logf("no room allocated (%d blocks): the filesystem has no fallocate", st.Blocks)
	}

	// The event written after the call lands as usual, right after the
	// one before, and both read back.
	ev := must(b.BuildUpstream(upstreamCallRecord(), completedCard(), nil))
	assert.NilError(t, w.Write(ev))
	got, err := ReadAll(path, Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(got), 2)
	assert.Equal(t, got[1].Type, TypeUpstreamCall)
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(data), "\x00"), "no hole of zeros between the events")
}

// TestReserveFollowsThePath: a log renamed away (rotated) is reopened by
// Reserve, as by a write, so the room is set aside in the file that will
// be read.
func TestReserveFollowsThePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	defer w.Close()
	assert.NilError(t, os.Rename(path, path+".1"))
	assert.NilError(t, reserve(t, w, eventRoom))
	assert.Equal(t, w.Reopens(ReopenMissing), uint64(1))
	fi, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, fi.Size(), int64(0))
}

func TestReserveClosed(t *testing.T) {
	t.Parallel()
	w, err := OpenWriter(filepath.Join(t.TempDir(), "audit.jsonl"))
	assert.NilError(t, err)
	assert.NilError(t, w.Close())
	assert.Check(t, is.ErrorIs(reserve(t, w, eventRoom), ErrClosed))
}

// chattr sets or clears attr on path; it skips the test when the tool or
// the filesystem cannot.
func chattr(t *testing.T, flag, path string) {
	t.Helper()
	bin, err := exec.LookPath("chattr")
	if err != nil {
		t.Skip("chattr is not installed (e2fsprogs): cannot make a file immutable")
	}
	if out, err := exec.Command(bin, flag, path).CombinedOutput(); err != nil {
		t.Skipf("chattr %s is not possible here (%v: %s): it needs CAP_LINUX_IMMUTABLE and a filesystem with inode flags (ext4, xfs, btrfs; not tmpfs or overlayfs)",
			flag, err, strings.TrimSpace(string(out)))
	}
}

// TestReserveRefusesAnImmutableLog: a log that no longer takes writes
// (chattr +i) fails Reserve, so the call it was for is not sent; an
// append-only log (chattr +a) is still a log, and passes.
func TestReserveRefusesAnImmutableLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag string
		ok   bool
	}{{"+i", false}, {"+a", true}} {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			w, err := OpenWriter(path)
			assert.NilError(t, err)
			defer w.Close()
			assert.NilError(t, w.Write(mustBuild(t, testBuilder(), completedRecord())))
			chattr(t, tc.flag, path)
			// Cleared before t.TempDir removes the file (cleanups run last
			// registered first).
			t.Cleanup(func() { _ = exec.Command("chattr", "-"+tc.flag[1:], path).Run() })
			before, err := os.Stat(path)
			assert.NilError(t, err)
			err = reserve(t, w, eventRoom)
			if tc.ok {
				assert.NilError(t, err)
				assert.NilError(t, w.Write(mustBuild(t, testBuilder(), completedRecord())))
				return
			}
			assert.Check(t, is.ErrorContains(err, "reserving room for the next event"))
			assert.Check(t, errors.Is(err, unix.EPERM), "%v", err)
			after, err := os.Stat(path)
			assert.NilError(t, err)
			assert.Equal(t, after.Size(), before.Size())
			// What Reserve foresaw: the event would not have been written.
			assert.Check(t, w.Write(mustBuild(t, testBuilder(), completedRecord())) != nil)
		})
	}
}

// TestReserveRefusesAFullDisk: on a filesystem without room for the
// event, Reserve fails before the call is sent. It mounts a small tmpfs,
// and skips where it cannot.
func TestReserveRefusesAFullDisk(t *testing.T) {
	dir, w := tmpfsWriter(t, "256k")
	assert.NilError(t, w.Write(mustBuild(t, testBuilder(), completedRecord())))
	room, err := w.Reserve(eventRoom)
	assert.NilError(t, err, "room while the disk has it")

	// Something else fills the disk.
	fill, err := os.Create(filepath.Join(dir, "fill"))
	assert.NilError(t, err)
	buf := make([]byte, 4096)
	for {
		if _, err := fill.Write(buf); err != nil {
			break
		}
	}
	fill.Close()
	// More than was set aside cannot be had.
	err = reserve(t, w, 4*eventRoom)
	assert.Check(t, errors.Is(err, unix.ENOSPC), "%v", err)
	assert.Check(t, is.ErrorContains(err, "reserving room for the next event"))
	// What was reserved takes the event.
	assert.NilError(t, w.Append(must(testBuilder().BuildUpstream(upstreamCallRecord(), completedCard(), nil)), room))
	held, rooms := w.Held()
	assert.Equal(t, held, int64(0))
	assert.Equal(t, rooms, 0)
}

// TestReserveEachCallItsOwnRoom: on a disk that fills, every room
// Reserve grants is its own: the second of two calls in flight is refused
// when the disk has room for one event only, the event of the first is
// written, an event written without a room (a decision) cannot take the
// room held, and a released room serves the next call.
func TestReserveEachCallItsOwnRoom(t *testing.T) {
	dir, w := tmpfsWriter(t, "512k")
	assert.NilError(t, w.Write(mustBuild(t, testBuilder(), completedRecord())))
	// The disk is filled to about one event's room past the log.
	fill, err := os.Create(filepath.Join(dir, "fill"))
	assert.NilError(t, err)
	buf := make([]byte, 4096)
	for {
		if _, err := fill.Write(buf); err != nil {
			break
		}
	}
	var st unix.Statfs_t
	assert.NilError(t, unix.Statfs(dir, &st))
	free := int64(st.Bavail) * int64(st.Bsize)
	assert.Check(t, free < eventRoom, "free %d", free)
	fi, err := fill.Stat()
	assert.NilError(t, err)
	assert.NilError(t, fill.Truncate(fi.Size()-(eventRoom+eventRoom/2-free)))
	fill.Close()

	first, err := w.Reserve(eventRoom)
	assert.NilError(t, err, "room for one event")
	_, err = w.Reserve(eventRoom)
	assert.Check(t, errors.Is(err, unix.ENOSPC), "a second call in flight gets no room of its own: %v", err)
	held, rooms := w.Held()
	assert.Equal(t, held, int64(eventRoom))
	assert.Equal(t, rooms, 1)

	// A large event with no room of its own may not eat the one held.
	big := completedRecord()
	big.Decision.Message = strings.Repeat("x", MaxMessageBytes)
	for range eventRoom / MaxMessageBytes {
		if err = w.Write(mustBuild(t, testBuilder(), big)); err != nil {
			break
		}
	}
	assert.Check(t, is.ErrorContains(err, "reserved for the events of 1 upstream requests in flight"))

	// The first call's event, as large as an event can be, is written.
	ev := must(testBuilder().BuildUpstream(upstreamCallRecord(), completedCard(), nil))
	ev.Data.Decision.Message = strings.Repeat("y", eventRoom-2048)
	assert.NilError(t, w.Append(ev, first))
	held, rooms = w.Held()
	assert.Equal(t, held, int64(0))
	assert.Equal(t, rooms, 0)
	first.Release() // a second release is nothing
	held, _ = w.Held()
	assert.Equal(t, held, int64(0))
	got, err := ReadAll(filepath.Join(dir, "audit.jsonl"), Filter{})
	assert.NilError(t, err)
	assert.Equal(t, got[len(got)-1].ID, ev.ID)
}

// TestReserveRelease: a room given back without an event frees its share
// for the next call.
func TestReserveRelease(t *testing.T) {
	t.Parallel()
	w, err := OpenWriter(filepath.Join(t.TempDir(), "audit.jsonl"))
	assert.NilError(t, err)
	defer w.Close()
	var rs []*Room
	for range 3 {
		r, err := w.Reserve(eventRoom)
		assert.NilError(t, err)
		rs = append(rs, r)
	}
	held, rooms := w.Held()
	assert.Equal(t, held, int64(3*eventRoom))
	assert.Equal(t, rooms, 3)
	rs[0].Release()
	rs[0].Release()
	assert.NilError(t, w.Append(must(testBuilder().BuildUpstream(upstreamCallRecord(), completedCard(), nil)), rs[1]))
	held, rooms = w.Held()
	assert.Equal(t, held, int64(eventRoom))
	assert.Equal(t, rooms, 1)
	// An event that fails validation uses its room up all the same.
	assert.Check(t, w.Append(&Event{}, rs[2]) != nil)
	held, rooms = w.Held()
	assert.Equal(t, held, int64(0))
	assert.Equal(t, rooms, 0)
}

// TestReserveAfterCopytruncate: room set aside once serves later calls
// (their Reserve allocates nothing), and a log truncated in place
// (logrotate's copytruncate frees its blocks) gets its room set aside
// again rather than being taken for one that still has it.
func TestReserveAfterCopytruncate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	defer w.Close()
	allocated := func() int64 {
		fi, err := os.Stat(path)
		assert.NilError(t, err)
		return fi.Sys().(*syscall.Stat_t).Blocks * 512
	}
	assert.NilError(t, reserve(t, w, eventRoom))
	if allocated() < eventRoom {
		t.Skip("the filesystem has no fallocate")
	}
	assert.Check(t, allocated() >= reserveChunk, "a chunk is set aside, not one event's room")
	assert.NilError(t, os.Truncate(path, 0))
	assert.Equal(t, allocated(), int64(0))
	assert.NilError(t, reserve(t, w, eventRoom))
	assert.Check(t, allocated() >= eventRoom, "the room is set aside again after the truncation")
}

// tmpfsWriter opens a Writer on a tmpfs of size mounted for the test
// (root only; skipped where it cannot be mounted), and returns the
// directory with it.
func tmpfsWriter(t *testing.T, size string) (string, *Writer) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	t.Parallel()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	w, err := OpenWriter(filepath.Join(dir, "audit.jsonl"))
	assert.NilError(t, err)
	t.Cleanup(func() { w.Close() })
	return dir, w
}
