package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mitrity/mitrity/govern/pollfd"
)

// MinCredentialBytes is the shortest credential value accepted. Output
// redaction replaces every occurrence of every injected value; a value this
// short would match ordinary text and redact noise, so it is refused instead.
const MinCredentialBytes = 8

// MaxCredentialBytes bounds a value read from a file or a command.
const MaxCredentialBytes = 64 * KiB

// CredentialTimeout bounds a credential command.
const CredentialTimeout = 10 * time.Second

// CredentialSource is where one credential's value comes from: exactly one of
// Env, File or Command is set.
type CredentialSource struct {
	ID string
	// Env names a variable of the gateway's own environment.
	Env string
	// File is an absolute path to a file of mode 0600 or 0400 owned by the
	// gateway's user, checked at every fetch rather than at load, since
	// that is when it is read.
	File string
	// Command is a program and its arguments, run without a shell.
	Command []string
}

// Kind is "env", "file" or "command".
func (s CredentialSource) Kind() string {
	switch {
	case s.Env != "":
		return "env"
	case s.File != "":
		return "file"
	case s.Command != nil:
		return "command"
	}
	return ""
}

// Fetch reads the credential's value now: values are fetched at execution
// time, never cached by the config. Errors name the credential, never its
// value. A value read from a file or a command loses one trailing newline,
// the one `echo token > file` adds.
func (s CredentialSource) Fetch(ctx context.Context) (string, error) {
	var (
		v   string
		err error
	)
	switch s.Kind() {
	case "env":
		v = os.Getenv(s.Env)
		if v == "" {
			return "", fmt.Errorf("credential %q: $%s is empty or unset", s.ID, s.Env)
		}
	case "file":
		v, err = s.readFile()
	case "command":
		v, err = s.run(ctx)
	default:
		return "", fmt.Errorf("credential %q: no source", s.ID)
	}
	if err != nil {
		return "", err
	}
	switch {
	case v == "":
		return "", fmt.Errorf("credential %q: the value is empty", s.ID)
	case len(v) < MinCredentialBytes:
		return "", fmt.Errorf("credential %q: the value is %d bytes; at least %d are required, since output redaction would otherwise match ordinary text", s.ID, len(v), MinCredentialBytes)
	}
	return v, nil
}

func (s CredentialSource) readFile() (string, error) {
	// Stat first so a FIFO at the path cannot block the open; the checks
	// that count run on the opened file.
	fi, err := os.Stat(s.File)
	if err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("credential %q: %s is not a regular file", s.ID, s.File)
	}
	f, err := os.Open(s.File)
	if err != nil {
		return "", fmt.Errorf("credential %q: %w", s.ID, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return "", fmt.Errorf("credential %q: %w", s.ID, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("credential %q: %s is not a regular file", s.ID, s.File)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 && perm != 0o400 {
		return "", fmt.Errorf("credential %q: %s has mode %04o; want 0600 or 0400 (chmod 600 %s)", s.ID, s.File, perm, s.File)
	}
	if err := checkOwner(fi); err != nil {
		return "", fmt.Errorf("credential %q: %s: %w", s.ID, s.File, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxCredentialBytes+1))
	if err != nil {
		return "", fmt.Errorf("credential %q: %w", s.ID, err)
	}
	if len(b) > MaxCredentialBytes {
		return "", fmt.Errorf("credential %q: %s is larger than %d KiB", s.ID, s.File, MaxCredentialBytes/KiB)
	}
	return trimNewline(string(b)), nil
}

func (s CredentialSource) run(ctx context.Context) (string, error) {
	if len(s.Command) == 0 {
		return "", fmt.Errorf("credential %q: empty command", s.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, CredentialTimeout)
	defer cancel()
	// Argument vector as written: no shell, so nothing in it is expanded.
	cmd := exec.CommandContext(ctx, s.Command[0], s.Command[1:]...)
	cmd.WaitDelay = time.Second // a grandchild holding stdout must not hang us
	var out limitedBuffer
	cmd.Stdout = &out
	// Stdin and stderr go to /dev/null: a helper's stderr could carry the
	// value, and nothing the gateway logs may.
	// Awaited in the poller (pollfd.Wait), not in waitid(2): a helper
	// that hangs must not hold the gateway's garbage collection, and with
	// it the timeout that kills the helper.
	err := cmd.Start()
	if err == nil {
		err = pollfd.Wait(cmd)
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "", fmt.Errorf("credential %q: %s did not finish in time (limit %s)", s.ID, s.Command[0], CredentialTimeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("credential %q: %s exited with status %d", s.ID, s.Command[0], ee.ExitCode())
		}
		return "", fmt.Errorf("credential %q: %w", s.ID, err)
	case out.over:
		return "", fmt.Errorf("credential %q: %s printed more than %d KiB", s.ID, s.Command[0], MaxCredentialBytes/KiB)
	}
	return trimNewline(out.String()), nil
}

func trimNewline(s string) string {
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t
	}
	return strings.TrimSuffix(s, "\n")
}

// limitedBuffer keeps the first MaxCredentialBytes written and notes more.
type limitedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := MaxCredentialBytes - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
