package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// digestBudget bounds the bytes digest reads for one path: an editor's
// project directory can be large, and the run's end must not wait on it.
// Past it, a file's size, mode and modification time stand for its bytes.
const digestBudget = 4 << 20

// maxDigestEntries bounds the entries of a directory tree digest walks.
const maxDigestEntries = 4096

// digest is a SHA-256 of what path holds: a file's bytes; a symlink's
// target; a directory's entries, recursively (name, type, mode, and each
// one's own digest input). "" when path does not exist.
func digest(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	h := sha256.New()
	budget := int64(digestBudget)
	entries := 0
	var add func(p string, fi fs.FileInfo)
	add = func(p string, fi fs.FileInfo) {
		fmt.Fprintf(h, "%s\x00%v\x00", filepath.Base(p), fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			fmt.Fprintf(h, "->%s\x00", t)
		case fi.Mode().IsRegular():
			if fi.Size() > budget {
				fmt.Fprintf(h, "size=%d mtime=%d\x00", fi.Size(), fi.ModTime().UnixNano())
				return
			}
			f, err := os.Open(p)
			if err != nil {
				fmt.Fprintf(h, "unreadable\x00")
				return
			}
			n, _ := io.Copy(h, io.LimitReader(f, budget))
			f.Close()
			budget -= n
		case fi.IsDir():
			des, err := os.ReadDir(p)
			if err != nil {
				fmt.Fprintf(h, "unreadable\x00")
				return
			}
			for _, de := range des { // ReadDir sorts by name
				if entries++; entries > maxDigestEntries {
					fmt.Fprintf(h, "truncated\x00")
					return
				}
				if cfi, err := de.Info(); err == nil {
					add(filepath.Join(p, de.Name()), cfi)
				}
			}
			fmt.Fprintf(h, "end\x00")
		}
	}
	add(path, fi)
	return hex.EncodeToString(h.Sum(nil))
}
