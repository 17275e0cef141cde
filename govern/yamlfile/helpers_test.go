package yamlfile

import (
	"io/fs"
	"os"
)

func errFileNotExist() error { return fs.ErrNotExist }

func writeFile(name, s string) error { return os.WriteFile(name, []byte(s), 0o600) }
