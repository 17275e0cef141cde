package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// probeCacheFacts are what a full-strength report depends on: the boot,
// the caller, the binaries that build the sandbox and the kernel's
// user-namespace switches. A change to any of them is a new key.
func probeCacheFacts(helper string) (key, bwrap string, err error) {
	bwrap, err = findBwrap("")
	if err != nil {
		return "", "", err
	}
	facts := []string{fmt.Sprint("euid=", os.Geteuid())}
	for _, f := range []string{"/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/unprivileged_userns_clone",
		"/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"} {
		b, _ := os.ReadFile(f) // absent on some kernels: absent is a fact too
		facts = append(facts, f+"="+strings.TrimSpace(string(b)))
	}
	self, _ := os.Executable()
	for _, p := range []string{bwrap, helper, self} {
		fi, err := os.Stat(p)
		if err != nil {
			return "", "", err
		}
		facts = append(facts, fmt.Sprintf("%s:%d:%d:%v", p, fi.Size(), fi.ModTime().UnixNano(), fi.Mode()))
	}
	sum := sha256.Sum256([]byte(strings.Join(facts, "\n")))
	return hex.EncodeToString(sum[:16]), bwrap, nil
}

// private reports whether fi is this user's and writable by no one else:
// a cached report names the bwrap the gateway will run, so only this user
// may have written it.
func private(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0
}

type cachedProbe struct {
	Expires time.Time   `json:"expires"`
	Report  ProbeReport `json:"report"`
}

// ProbeCached is Probe, with a full-strength report remembered in dir for
// ttl. A one-shot gateway (mitrity-gateway exec) would otherwise start
// three sandboxes of probing before every command. Only a full-strength
// report is kept, under a key of everything it depends on
// (probeCacheFacts); one that stopped holding within ttl costs a run that
// fails to start, never a run without its sandbox. A report that is not
// full strength is never cached: the next call probes again.
func ProbeCached(ctx context.Context, dir string, ttl time.Duration, opts ...Option) ProbeReport {
	o := collect(opts)
	key, bwrap, err := probeCacheFacts(o.helper)
	if err != nil {
		return Probe(ctx, opts...)
	}
	dir = filepath.Join(dir, "probe")
	file := filepath.Join(dir, key+".json")
	if c, ok := readProbeCache(dir, file); ok && c.Report.FullStrength && c.Report.BwrapPath == bwrap &&
		time.Now().Before(c.Expires) && time.Until(c.Expires) <= ttl {
		return c.Report
	}
	r := Probe(ctx, opts...)
	if r.FullStrength {
		writeProbeCache(dir, file, cachedProbe{Expires: time.Now().Add(ttl), Report: r})
	}
	return r
}

func readProbeCache(dir, file string) (cachedProbe, bool) {
	var c cachedProbe
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || !private(fi) {
		return c, false
	}
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return c, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !private(fi) {
		return c, false
	}
	err = json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&c)
	return c, err == nil
}

// writeProbeCache writes atomically into a directory only this user can
// write; failing to cache is no error (the next call probes).
func writeProbeCache(dir, file string, c cachedProbe) {
	// Root's runtime directory also holds the run_as user's credential
	// directories (mode none): traversable, not listable. A user's is
	// private, like the admission socket's directory it also is.
	perm := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		perm = 0o711
	}
	_ = os.MkdirAll(filepath.Dir(dir), perm)
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || !private(fi) {
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	if os.Rename(tmp.Name(), file) != nil {
		os.Remove(tmp.Name())
	}
}
