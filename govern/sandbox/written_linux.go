package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern/secretscan"
)

// After a run that carried credentials, the workspace is searched for the
// files it changed that hold one of them (in any form secretscan knows):
// a granted run can write its credential where another run, or the
// developer, reads it later. The gateway redacts every value it has from
// every run's output; this says where the value was left, on the audit
// event. A file counts as changed by its status-change time (ctime), which
// a program cannot set back as it can the modification time.

// Bounds of the search: a run's end must not wait on a large tree.
const (
	writtenMaxEntries = 200000
	writtenMaxFile    = 8 << 20
	writtenMaxBytes   = 128 << 20
	writtenMaxTime    = 3 * time.Second
)

// findWritten returns the files under roots changed since start that
// hold a value m finds, and whether the search was cut short by its
// bounds.
func findWritten(roots []string, start time.Time, m *secretscan.Matcher) (found []WrittenCredential, partial bool) {
	if m.Empty() {
		return nil, false
	}
	deadline := time.Now().Add(writtenMaxTime)
	entries, read := 0, int64(0)
	buf := make([]byte, 0, 64<<10)
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: skipped
			}
			if entries++; entries > writtenMaxEntries || time.Now().After(deadline) {
				partial = true
				return fs.SkipAll
			}
			if !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil || !changedSince(fi, start) {
				return nil
			}
			if fi.Size() > writtenMaxFile || read+fi.Size() > writtenMaxBytes {
				partial = true
				return nil
			}
			b, err := readChanged(root, p, buf[:0], writtenMaxFile)
			read += int64(len(b))
			if err == nil {
				if id, ok := m.Find(b); ok {
					found = append(found, WrittenCredential{Path: p, Credential: id})
				}
			}
			buf = b
			return nil
		})
		if err != nil || partial && entries > writtenMaxEntries {
			break
		}
	}
	return found, partial
}

// readChanged reads the regular file at p, under root, into buf: at most
// max bytes. The tree is the runs', which can change it while it is
// searched (another run of the same workspace is still going): p is opened
// beneath root without following any symbolic link, non-blocking (a FIFO
// swapped in does not wait for a writer), and what was opened must be a
// regular file of at most max bytes; a device (/dev/zero) or a file grown
// since the walk saw it is not read past max.
func readChanged(root, p string, buf []byte, max int64) ([]byte, error) {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return buf, err
	}
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return buf, err
	}
	defer unix.Close(dir)
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == unix.ENOSYS {
		// Before Linux 5.6: only the last component is not followed; what
		// is opened is still checked to be a bounded regular file.
		fd, err = unix.Openat(dir, rel, flags, 0)
	}
	if err != nil {
		return buf, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return buf, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return buf, fmt.Errorf("%s: not a regular file of at most %d bytes", p, max)
	}
	return readAllInto(io.LimitReader(f, max), buf)
}

func changedSince(fi fs.FileInfo, start time.Time) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.ModTime().After(start)
	}
	ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	return !ctime.Before(start)
}

func readAllInto(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
