package sandbox

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

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
			f, err := os.Open(p)
			if err != nil {
				return nil
			}
			buf = buf[:0]
			b, err := readAllInto(f, buf)
			f.Close()
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
