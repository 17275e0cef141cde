package yamlfile

import (
	"io/fs"
	"os"
	"syscall"
)

func errFileNotExist() error { return fs.ErrNotExist }

func writeFile(name, s string) error { return os.WriteFile(name, []byte(s), 0o600) }

func mkfifo(name string) error { return syscall.Mkfifo(name, 0o600) }
