package sandbox

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/peer"
)

// The live register is this user's running sandboxes, kept as one file
// each in a directory every gateway (and sandboxrun) of the user shares:
// the runtime directory's live/. It answers two questions no single
// process can:
//
//   - is this socket peer inside one of our sandboxes? (its pid namespace
//     is one of theirs) — a sandbox runs as the gateway's own uid, so a
//     uid check cannot tell;
//   - could another running sandbox replace what this run pinned? Linux
//     detaches a bind mount whose mount point is renamed over or unlinked
//     from another mount namespace, so a run that renames a file over a
//     path another run pinned would make that run see the new bytes. A
//     mount point cannot be renamed or unlinked in its own namespace: a
//     run therefore binds the paths it pins (and their directories) over
//     themselves inside every other running sandbox that can write them,
//     before its own command starts, and every sandbox that starts later
//     does the same for what is already pinned.

// LiveDir is the register's directory for the user with euid.
func LiveDir(euid int) string { return filepath.Join(govern.RuntimeDir(euid, os.Getenv), "live") }

// liveEntry is one running sandbox.
type liveEntry struct {
	ID string `json:"id"`
	// Owner is the supervisor's pid: an entry whose owner is gone is stale.
	Owner int `json:"owner"`
	// Pid is the host pid of the sandbox's first process, Start its start
	// time (a reused pid does not match), PidNS its pid namespace; all
	// zero while the sandbox starts.
	Pid   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
	PidNS uint64 `json:"pidns,omitempty"`
	// Roots are the paths the sandbox can write; Held what it pinned
	// inside them, with their directories: no other run may rename them.
	Roots []string `json:"roots"`
	Held  []string `json:"held,omitempty"`
	// Session marks an agent launcher's sandbox (Spec.Session): its
	// processes are the agent and its own tools, whose hook and relay the
	// admission socket serves (see NotInSandbox); its pins and roots are
	// held like any run's.
	Session bool `json:"session,omitempty"`
}

// live is one run's place in the register.
type live struct {
	dir   string
	entry liveEntry
}

// liveLockTimeout bounds the wait for the register's lock.
const liveLockTimeout = 5 * time.Second

// openLive makes the register's directory (0700, the user's own).
func openLive(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return fmt.Errorf("live register %s is not a private directory of this user", dir)
	}
	return nil
}

func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// withLock runs f holding the register's lock.
func withLock(dir string, f func() error) error {
	fd, err := unix.Open(filepath.Join(dir, ".lock"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("live register: %w", err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(liveLockTimeout)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return fmt.Errorf("live register: lock: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	return f()
}

// registerLive adds a starting sandbox that writes roots and pins held,
// and returns it with every other live sandbox, read under the same lock:
// each of those either registered before (so this run holds what they
// pinned) or will see this one (and hold what it pins).
func registerLive(dir string, roots, held []string, session bool) (*live, []liveEntry, error) {
	if err := openLive(dir); err != nil {
		return nil, nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	l := &live{dir: dir, entry: liveEntry{ID: hex.EncodeToString(b[:]), Owner: os.Getpid(), Roots: roots, Held: held, Session: session}}
	var others []liveEntry
	err := withLock(dir, func() error {
		others = readLive(dir, true)
		return l.write()
	})
	if err != nil {
		return nil, nil, err
	}
	return l, others, nil
}

func (l *live) path() string { return filepath.Join(l.dir, l.entry.ID+".json") }

// write replaces the entry's file atomically.
func (l *live) write() error {
	b, err := json.Marshal(l.entry)
	if err != nil {
		return err
	}
	tmp := l.path() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("live register: %w", err)
	}
	return os.Rename(tmp, l.path())
}

// started records the sandbox's first process.
func (l *live) started(pid int) error {
	if l == nil {
		return nil
	}
	start, err := startTime(pid)
	if errors.Is(err, os.ErrNotExist) {
		return nil // bubblewrap gave up already: the run reports why
	}
	if err != nil {
		return err
	}
	ns, err := peer.PidNSOf(pid)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l.entry.Pid, l.entry.Start, l.entry.PidNS = pid, start, ns
	return l.write()
}

// done removes the entry.
func (l *live) done() {
	if l != nil {
		os.Remove(l.path())
	}
}

// readLive returns the entries that are still live, removing stale ones
// when prune (the caller holds the lock).
func readLive(dir string, prune bool) []liveEntry {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []liveEntry
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, de.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var e liveEntry
		if json.Unmarshal(b, &e) != nil || !e.alive() {
			if prune {
				e.endOrphaned()
				os.Remove(p)
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// alive: its supervisor lives, and so does the sandbox it started (the
// same process: its start time matches).
func (e liveEntry) alive() bool {
	if e.Owner <= 0 || !processAlive(e.Owner) {
		return false
	}
	if e.Pid == 0 {
		return true // starting
	}
	st, err := startTime(e.Pid)
	return err == nil && st == e.Start
}

// runMarkEnv is the variable bubblewrap is told on its command line to set
// in the sandbox (--setenv), to the run's register ID. The command line of
// bubblewrap's outer process and of the sandbox's first process (a clone,
// not an exec) is /proc/<pid>/cmdline: how a later run finds what is left
// of a run whose supervisor died before it learnt the first process's pid.
const runMarkEnv = "MITRITY_RUN"

// endOrphaned kills what is left of the sandbox of a stale entry whose
// supervisor died (SIGKILLed with its gateway, or alone). The sandbox
// dies with its supervisor, except in one window of bubblewrap's: its
// first process waits for the outer one to write the user namespace's maps
// and arms --die-with-parent only after that, so an outer process killed in
// between leaves it blocked for good, holding a pid and user namespace. The
// first process is killed by its recorded pid (when its start time still
// matches) and by its mark, which also finds it before the pid was
// recorded. An entry whose supervisor lives ended normally: nothing of it
// is running.
func (e liveEntry) endOrphaned() {
	if e.Owner <= 0 || processAlive(e.Owner) {
		return
	}
	if e.Pid > 0 {
		if st, err := startTime(e.Pid); err == nil && st == e.Start {
			unix.Kill(e.Pid, unix.SIGKILL)
		}
	}
	if e.ID != "" {
		for _, pid := range markedBwraps(e.ID) {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// markedBwraps returns the bubblewrap processes whose command line carries
// run id's mark.
func markedBwraps(id string) []int {
	des, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := "/proc/" + de.Name()
		if comm, err := os.ReadFile(dir + "/comm"); err != nil || strings.TrimSpace(string(comm)) != "bwrap" {
			continue
		}
		if cmdline, err := os.ReadFile(dir + "/cmdline"); err == nil && runMark(cmdline) == id {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runMark is the run ID a bubblewrap command line carries, or "".
func runMark(cmdline []byte) string {
	args := strings.Split(string(cmdline), "\x00")
	for i := 0; i+2 < len(args); i++ {
		if args[i] == "--setenv" && args[i+1] == runMarkEnv {
			return args[i+2]
		}
	}
	return ""
}

// EndOrphans ends what runs of this user whose supervisor died left
// running, and removes their entries: what a gateway does when it starts
// (one SIGKILLed before it may have left some) and when a helper ended
// without a result. Every run does the same when it registers.
func EndOrphans() error { return sweepLive(LiveDir(os.Geteuid())) }

// sweepLive is EndOrphans for the register in dir.
func sweepLive(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil // no sandbox ever ran
	}
	return withLock(dir, func() error {
		readLive(dir, true)
		return nil
	})
}

func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// startTime is field 22 of /proc/pid/stat: when the process started, in
// clock ticks since boot.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("malformed stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// InLiveSandbox reports whether a process in pid namespace pidns is
// inside one of the running sandboxes of the user with euid: a governed
// command's, an upstream server's; not an agent launcher's session, whose
// processes are the agent itself (its hook and relay are the admission
// socket's clients). A register that cannot be read answers true: a
// socket then refuses, closed.
func InLiveSandbox(euid int, pidns uint64) bool {
	dir := LiveDir(euid)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return false // no sandbox ever ran
	}
	if _, err := os.ReadDir(dir); err != nil {
		return true
	}
	for _, e := range readLive(dir, false) {
		if e.PidNS == pidns && pidns != 0 && !e.Session {
			return true
		}
	}
	return false
}

// NotInSandbox refuses a peer inside one of this user's running
// sandboxes: the check for a socket that serves processes of other
// sandboxes too (an agent framework's own, which runs the hook relay).
func NotInSandbox(p peer.Peer) error {
	if p.PidNS == 0 || InLiveSandbox(os.Geteuid(), p.PidNS) {
		return ErrSandboxPeer
	}
	return nil
}

// OnlyHost refuses a peer that is not in this process's own pid and user
// namespaces: the check for a socket only the operator's tools reach (the
// approvals of held calls, an egress proxy's bridge).
func OnlyHost(p peer.Peer) error {
	same, err := peer.SameNamespaces(p)
	if err != nil || !same {
		return ErrNotHost
	}
	return NotInSandbox(p)
}

// waitStarted waits until the sandbox of entry id is set up (or is gone:
// ok false): it has a first process, and that process has a child.
// bubblewrap forks the sandbox's init only after it built the sandbox's
// mounts and pivoted into them; before that the mount namespace is still
// being built (its root an empty tmpfs for a while), and nothing can be
// held in it.
func waitStarted(dir, id string, d time.Duration) (liveEntry, bool, error) {
	deadline := time.Now().Add(d)
	for {
		b, err := os.ReadFile(filepath.Join(dir, id+".json"))
		if errors.Is(err, os.ErrNotExist) {
			return liveEntry{}, false, nil
		}
		var e liveEntry
		if err == nil && json.Unmarshal(b, &e) == nil {
			if !e.alive() {
				return liveEntry{}, false, nil
			}
			if e.Pid != 0 && hasChild(e.Pid) {
				return e, true, nil
			}
		}
		if time.Now().After(deadline) {
			return liveEntry{}, false, fmt.Errorf("another run is still starting after %v", d)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// hasChild reports whether pid has a child process.
func hasChild(pid int) bool {
	p := strconv.Itoa(pid)
	b, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	return err == nil && len(bytes.TrimSpace(b)) > 0
}

// holdIn binds paths over themselves in the running sandbox o's mount
// namespace, so that nothing in it can rename or unlink them. It enters
// the user namespace that owns o's mount namespace (the one bubblewrap
// mounted in: the sandbox's processes are in a nested one, without
// capabilities) with nsenter, and runs mount there. Those programs are
// resolved inside o: none may be where o can write.
func holdIn(o liveEntry, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	nsenter, err := findTool("nsenter")
	if err != nil {
		return err
	}
	mount, err := findTool("mount")
	if err != nil {
		return err
	}
	for _, p := range []string{mount, "/bin/sh"} {
		if real, err := filepath.EvalSymlinks(p); err != nil || rootOf(o.Roots, real) != "" {
			return fmt.Errorf("%s is inside a root the other run writes", p)
		}
	}
	mnt, err := os.Open("/proc/" + strconv.Itoa(o.Pid) + "/ns/mnt")
	if err != nil {
		return err
	}
	defer mnt.Close()
	if st, err := startTime(o.Pid); err != nil || st != o.Start {
		return nil // ended meanwhile
	}
	ufd, err := unix.IoctlRetInt(int(mnt.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return fmt.Errorf("the owner of the other run's mount namespace: %w", err)
	}
	user := os.NewFile(uintptr(ufd), "userns")
	defer user.Close()
	// Whoever created that namespace is root in it already (bubblewrap
	// maps its caller to 0 there): nsenter keeps our credentials. A root
	// gateway entering its run_as user's namespace becomes root in it.
	args := []string{"--user=/proc/self/fd/3", "--mount=/proc/self/fd/4"}
	if owner, err := unix.IoctlGetUint32(ufd, unix.NS_GET_OWNER_UID); err == nil && int(owner) == os.Geteuid() {
		args = append(args, "--preserve-credentials")
	}
	script := `for p do "$M" --bind "$p" "$p" || exit 1; done`
	cmd := exec.Command(nsenter, append(append(args, "--", "/bin/sh", "-c", script, "sh"), paths...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "M=" + mount}
	cmd.ExtraFiles = []*os.File{user, mnt}
	if out, err := cmd.CombinedOutput(); err != nil {
		if st, serr := startTime(o.Pid); serr != nil || st != o.Start {
			return nil // it ended while we entered it
		}
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// toolDirs are where nsenter and mount (util-linux) are looked for: never
// PATH, which the gateway may inherit from anyone.
var toolDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}

func findTool(name string) (string, error) {
	for _, d := range toolDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s (util-linux) is not installed: a run cannot keep a concurrent one from replacing its pinned scripts", name)
}

// heldPaths are a run's pinned paths inside its writable roots, with every
// directory between the root and them: what no other run may rename.
func heldPaths(pins []govern.Pin, roots []string) []string {
	var out []string
	for _, p := range pins {
		for _, t := range []string{p.Path, p.RealPath} {
			r := rootOf(roots, t)
			if r == "" {
				continue
			}
			for d := t; d != r && d != "/"; d = filepath.Dir(d) {
				if !slices.Contains(out, d) {
					out = append(out, d)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return depth(a) - depth(b) })
	return out
}

// heldWithin returns the paths of held inside one of roots that exist,
// parents first.
func heldWithin(held, roots []string) []string {
	var out []string
	for _, h := range held {
		if rootOf(roots, h) != "" {
			if _, err := os.Lstat(h); err == nil {
				out = append(out, h)
			}
		}
	}
	return out
}
