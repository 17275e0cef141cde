package audit

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// The writer follows its path: an event never goes to a file that was
// rotated away or deleted.
func TestWriterFollowsItsPath(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, w *Writer, path string)
		cause ReopenCause
		// rotated: where the events before the fault are afterwards.
		rotated string
	}{
		{"renamed (logrotate, no signal)", func(t *testing.T, _ *Writer, path string) {
			assert.NilError(t, os.Rename(path, path+".1"))
		}, ReopenMissing, ".1"},
		{"renamed and recreated by another", func(t *testing.T, _ *Writer, path string) {
			assert.NilError(t, os.Rename(path, path+".1"))
			assert.NilError(t, os.WriteFile(path, nil, 0o600))
		}, ReopenReplaced, ".1"},
		{"deleted", func(t *testing.T, _ *Writer, path string) {
			assert.NilError(t, os.Remove(path))
		}, ReopenMissing, ""},
		{"renamed, then SIGHUP", func(t *testing.T, w *Writer, path string) {
			assert.NilError(t, os.Rename(path, path+".1"))
			assert.NilError(t, w.Reopen())
		}, ReopenRequested, ".1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			w, err := OpenWriter(path)
			assert.NilError(t, err)
			defer w.Close()
			var told []ReopenCause
			w.OnReopen = func(c ReopenCause, err error) {
				assert.NilError(t, err)
				told = append(told, c)
			}
			assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
			tc.fault(t, w, path)
			after := mustBuild(t, b, completedRecord())
			assert.NilError(t, w.Write(after))
			assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
			got, err := ReadAll(path, Filter{})
			assert.NilError(t, err)
			assert.Equal(t, len(got), 2, "the events after the fault are in the file at the path")
			assert.Equal(t, got[0].ID, after.ID)
			if tc.rotated != "" {
				old, err := ReadAll(path+tc.rotated, Filter{})
				assert.NilError(t, err)
				assert.Equal(t, len(old), 1, "the event before stays in the rotated file")
			}
			assert.DeepEqual(t, told, []ReopenCause{tc.cause})
			assert.Equal(t, w.Reopens(tc.cause), uint64(1))
			fi, err := os.Stat(path)
			assert.NilError(t, err)
			assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o600))
		})
	}
}

// A path that cannot be opened again fails every write, counted, until it
// can: the gateway refuses the calls it cannot audit.
func TestWriterFailsWhileThePathCannotBeOpened(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only directory")
	}
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	defer w.Close()
	b := testBuilder()
	assert.NilError(t, os.Remove(path))
	assert.NilError(t, os.Chmod(dir, 0o500))
	defer os.Chmod(dir, 0o700)
	assert.ErrorContains(t, w.Write(mustBuild(t, b, completedRecord())), "permission denied")
	assert.Equal(t, w.Errors(), uint64(1))
	assert.NilError(t, os.Chmod(dir, 0o700))
	assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
	got, err := ReadAll(path, Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(got), 1)
}

// A path replaced by a FIFO that nobody reads fails the write at once: an
// open(2) for writing would wait for a reader, holding the writer, so
// every later call would hang instead of being refused (audit_unavailable).
// Once a regular file is back at the path, writes succeed again.
func TestWriterRefusesAFIFOAtItsPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	defer w.Close()
	b := testBuilder()
	assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
	assert.NilError(t, os.Remove(path))
	assert.NilError(t, syscall.Mkfifo(path, 0o600))
	done := make(chan error, 1)
	go func() { done <- w.Write(mustBuild(t, b, completedRecord())) }()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "audit log")
	case <-time.After(5 * time.Second):
		// Free the writer so the test can end: a reader lets the open return.
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer f.Close()
		}
		<-done
		t.Fatal("Write waited for a reader of the FIFO at the audit path")
	}
	assert.Equal(t, w.Errors(), uint64(1))
	assert.NilError(t, os.Remove(path))
	assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
	got, err := ReadAll(path, Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(got), 1)
}

// A path that was a file when the writer opened it and is a symbolic link
// now (planted by whoever can write the directory) is not followed: the
// events do not go to the file the link names, which the gateway may be
// able to write and nobody reads as the trail. Writes fail (the calls are
// refused) until a file or nothing is back at the path. A path that was a
// link at the first open, the operator's choice, is still followed.
func TestWriterDoesNotFollowAPlantedLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	defer w.Close()
	b := testBuilder()
	assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
	victim := filepath.Join(dir, "victim")
	assert.NilError(t, os.WriteFile(victim, []byte("keep\n"), 0o600))
	assert.NilError(t, os.Remove(path))
	assert.NilError(t, os.Symlink(victim, path))
	assert.Check(t, w.Write(mustBuild(t, b, completedRecord())) != nil, "an event went through the planted link")
	got, err := os.ReadFile(victim)
	assert.NilError(t, err)
	assert.Equal(t, string(got), "keep\n")
	dangling := filepath.Join(dir, "created-by-the-gateway")
	assert.NilError(t, os.Remove(path))
	assert.NilError(t, os.Symlink(dangling, path))
	assert.Check(t, w.Write(mustBuild(t, b, completedRecord())) != nil, "an event went through the planted link")
	_, err = os.Lstat(dangling)
	assert.Check(t, os.IsNotExist(err), "the link's target was created")
	assert.NilError(t, os.Remove(path))
	assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))

	// The operator's own link, there at the first open, is followed.
	target := filepath.Join(dir, "real.jsonl")
	linked := filepath.Join(dir, "linked.jsonl")
	assert.NilError(t, os.Symlink(target, linked))
	lw, err := OpenWriter(linked)
	assert.NilError(t, err)
	defer lw.Close()
	assert.NilError(t, lw.Write(mustBuild(t, b, completedRecord())))
	assert.NilError(t, lw.Reopen())
	assert.NilError(t, lw.Write(mustBuild(t, b, completedRecord())))
	evs, err := ReadAll(target, Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(evs), 2)
}
