package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// SeenFile is where the catalog keeps, across runs of the gateway, the
// definition hash each served name was first seen (or approved) with: a
// stdio client starts a gateway per session, and a definition that changes
// between two of them must be withheld as surely as one that changes
// within one. It is one JSON object (served name -> hex SHA-256), mode
// 0600, in the audit log's directory (one of the gateway's own, masked
// from every sandbox). Gateways sharing it take an flock around each read
// and update; the first to record a name wins.
type SeenFile struct{ Path string }

// SeenFileName is the file's name in the audit log's directory.
const SeenFileName = "upstream-definitions.json"

// SeenFileIn is the SeenFile of an audit log at auditPath.
func SeenFileIn(auditPath string) SeenFile {
	return SeenFile{Path: filepath.Join(filepath.Dir(auditPath), SeenFileName)}
}

// Load reads every recorded hash (none when the file does not exist).
func (f SeenFile) Load() (map[string]string, error) {
	m := map[string]string{}
	err := f.locked(unix.LOCK_SH, func(file *os.File) error {
		var err error
		m, err = read(file)
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	return m, err
}

// First records sha as served's first-seen hash unless another is
// recorded already, and returns the one recorded.
func (f SeenFile) First(served, sha string) (string, error) {
	return f.update(served, sha, false)
}

// Set records sha as served's accepted hash (an operator approved it).
func (f SeenFile) Set(served, sha string) error {
	_, err := f.update(served, sha, true)
	return err
}

func (f SeenFile) update(served, sha string, replace bool) (string, error) {
	stored := sha
	err := f.locked(unix.LOCK_EX, func(file *os.File) error {
		m, err := read(file)
		if err != nil {
			return err
		}
		if old, ok := m[served]; ok && !replace {
			stored = old
			return nil
		}
		m[served] = sha
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		if err := file.Truncate(0); err != nil {
			return err
		}
		if _, err := file.WriteAt(append(b, '\n'), 0); err != nil {
			return err
		}
		return file.Sync()
	})
	return stored, err
}

// locked runs do on the file under an flock of kind (created, 0600, for
// an exclusive one).
func (f SeenFile) locked(kind int, do func(*os.File) error) error {
	flag := os.O_RDONLY
	if kind == unix.LOCK_EX {
		flag = os.O_RDWR | os.O_CREATE
	}
	file, err := os.OpenFile(f.Path, flag, 0o600)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := unix.Flock(int(file.Fd()), kind); err != nil {
		return fmt.Errorf("%s: lock: %w", f.Path, err)
	}
	defer unix.Flock(int(file.Fd()), unix.LOCK_UN)
	if err := do(file); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	return nil
}

func read(file *os.File) (map[string]string, error) {
	m := map[string]string{}
	b, err := io.ReadAll(io.NewSectionReader(file, 0, 1<<26))
	if err != nil || len(b) == 0 {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not the gateway's definitions file (%v): move it away to start afresh", err)
	}
	return m, nil
}
