package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mitrity/mitrity/govern"
)

// Paths inside the sandbox. /run is a fresh tmpfs, so none of them exists
// on the host.
const (
	InsideRun  = "/run/mitrity"
	InsideInit = InsideRun + "/init"
)

// Subcommands of the helper binary: init runs inside the sandbox, the
// seccomp probe beside it.
const (
	HelperInit         = "init"
	HelperProbeSeccomp = "probe-seccomp"
)

// Version is a bubblewrap version.
type Version struct{ Major, Minor, Patch int }

// MinVersion is the oldest bubblewrap the backend accepts.
var MinVersion = Version{0, 5, 0}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v >= o.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

// ParseVersion reads "bubblewrap 0.8.0" (what bwrap --version prints) or a
// bare "0.8.0".
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "bubblewrap"))
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("bubblewrap version %q: want MAJOR.MINOR[.PATCH]", s)
	}
	var n [3]int
	for i, p := range parts {
		end := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			p = p[:end]
		}
		v, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("bubblewrap version %q: %w", s, err)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// Features are the bubblewrap options the command line may use, by
// version. Everything used unconditionally exists since MinVersion.
type Features struct {
	// TmpfsSize: --size before --tmpfs, and --perms before --tmpfs.
	TmpfsSize bool
	// DisableUserns: --disable-userns (nested user namespaces fail even
	// without the seccomp stage).
	DisableUserns bool
	// BindFD: --ro-bind-fd, used to bind the init binary from an open
	// descriptor rather than a path the dropped user may not reach.
	BindFD bool
}

// FeaturesOf returns what v supports. Only 0.8.0 was tested; newer
// versions keep these options.
func FeaturesOf(v Version) Features {
	v08 := v.AtLeast(Version{0, 8, 0})
	return Features{TmpfsSize: v08, DisableUserns: v08, BindFD: v08}
}

// Layout is everything the bubblewrap command line is built from, already
// resolved against the host: BuildArgs looks nothing up.
type Layout struct {
	Features Features
	// DropCaps: bwrap runs as uid 0, which keeps every capability inside
	// the user namespace unless told otherwise.
	DropCaps       bool
	WorkspaceRoots []string // bound writable
	// ReadOnlyRoots are workspace roots a settings file left unwritable;
	// WriteBinds the paths inside them it left writable.
	ReadOnlyRoots []string
	WriteBinds    []string
	// Covers are the directories hidden before the roots are bound, and
	// what is put back inside them, in mount order: a settings file's
	// denyRead directories that hold a root or an allowRead path, and the
	// allowRead paths revealed inside them; masked directories that hold a
	// root; the directories of masked files, with their other entries.
	Covers []CoverOp
	// Anchors are directories inside the writable parts bound over
	// themselves, parents first: a mount point cannot be renamed away, so
	// the protected paths and pins below them cannot be swapped out with
	// their parent.
	Anchors   []string
	Protected []string // existing protected paths, re-bound read-only
	Masks     []Mask
	Pins      []FDMount // judged bytes over each pinned path
	CredFiles []FDMount // Path is the file name under govern.CredentialDir
	// InitFD is the descriptor of the init binary (with BindFD); InitPath
	// its host path otherwise. InitArgs follow it on its command line.
	InitFD   int
	InitPath string
	InitArgs []string
	// SeccompFD carries the filter (raw BPF) bubblewrap installs on every
	// process of the sandbox; -1: none.
	SeccompFD  int
	TmpfsBytes int64
	RunBytes   int64
	InfoFD     int
	BlockFD    int // -1: none
	// LifelineFD is bubblewrap's --json-status-fd: the write end of a
	// pipe whose read end init holds. bubblewrap's outer process keeps it
	// open for as long as it lives, so init can tell, right before it
	// execs the command, that the process whose death kills the sandbox
	// is still there. 0: none.
	LifelineFD int
	Cwd        string
	// Session is a session's own mounts (Spec.Session); nil for a
	// command, whose base is the host read-only.
	Session *SessionLayout
}

// SessionLayout is a session's part of the command line.
type SessionLayout struct {
	// Mounts replace the host read-only, parents first.
	Mounts []SessionMount
	// Private and Sealed are the tmpfs directories among Mounts: Sealed
	// ones are made read-only once everything inside them is mounted.
	Private, Sealed []string
	// KeepSession: no --new-session (Session.TTY with the filter in force).
	KeepSession bool
	// RootInside: uid and gid 0 in the sandbox's user namespace.
	RootInside bool
}

// SessionMount is one mount of a session: a symlink (Link), a tmpfs
// (Tmpfs, its mode), data from a descriptor (DataFD, Perm), a file from an
// O_PATH descriptor (BindFD), or a host path (Source), read-only unless
// Writable.
type SessionMount struct {
	Path     string
	Link     string
	Tmpfs    os.FileMode
	DataFD   int
	Perm     os.FileMode
	BindFD   int
	Source   string
	Writable bool
}

// late reports whether m sits under a directory the sandbox makes afresh
// after its base (/tmp, /run): it is mounted once that directory exists.
func (m SessionMount) late() bool { return within("/tmp", m.Path) || within("/run", m.Path) }

func (m SessionMount) args(a []string, f Features) []string {
	fd := strconv.Itoa
	switch {
	case m.Link != "":
		return append(a, "--symlink", m.Link, m.Path)
	case m.Tmpfs != 0:
		if f.TmpfsSize {
			a = append(a, "--perms", fmt.Sprintf("%04o", m.Tmpfs))
		}
		return append(a, "--tmpfs", m.Path)
	case m.DataFD > 0:
		return append(a, "--perms", fmt.Sprintf("%04o", m.Perm), "--ro-bind-data", fd(m.DataFD), m.Path)
	case m.BindFD > 0:
		return append(a, "--ro-bind-fd", fd(m.BindFD), m.Path)
	case m.Writable:
		return append(a, "--bind", m.Source, m.Path)
	}
	return append(a, "--ro-bind", m.Source, m.Path)
}

// FDMount is data read from a descriptor and bound at a path.
type FDMount struct {
	Path string
	FD   int
	Perm os.FileMode // pins: the mode the bound copy gets
}

// BuildArgs returns bubblewrap's arguments (without argv[0]) for l, ending
// with the init command.
func BuildArgs(l Layout) []string {
	fd := strconv.Itoa
	a := []string{
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if l.Features.DisableUserns {
		a = append(a, "--disable-userns")
	}
	if l.Session != nil && l.Session.RootInside {
		a = append(a, "--uid", "0", "--gid", "0")
	}
	a = append(a, "--die-with-parent")
	if l.Session == nil || !l.Session.KeepSession {
		a = append(a, "--new-session")
	}
	if l.DropCaps {
		a = append(a, "--cap-drop", "ALL")
	}
	if l.Session == nil {
		a = append(a, "--ro-bind", "/", "/")
	} else {
		// Default-deny reads: the root is bubblewrap's empty tmpfs, and
		// only what the session names is put in it.
		for _, m := range l.Session.Mounts {
			if !m.late() {
				a = m.args(a, l.Features)
			}
		}
		for _, d := range l.Session.Sealed {
			a = append(a, "--remount-ro", d)
		}
	}
	a = append(a, "--dev", "/dev")
	sized := func(size int64, perms string, dest string) {
		if l.Features.TmpfsSize {
			if size > 0 {
				a = append(a, "--size", strconv.FormatInt(size, 10))
			}
			a = append(a, "--perms", perms)
		}
		a = append(a, "--tmpfs", dest)
	}
	// /dev/shm is its own sized tmpfs and /dev goes read-only, so neither
	// is an unbounded place to write.
	sized(l.TmpfsBytes, "1777", "/dev/shm")
	a = append(a, "--remount-ro", "/dev", "--proc", "/proc")
	// The kernel's settings are checked against the caller's uid, not a
	// capability: where the sandbox's uid 0 is the host's root (root runs
	// mitrity-sandboxrun with no run_as; the gateway refuses to, the
	// helper does not), a writable /proc/sys is kernel.core_pattern
	// and kernel.modprobe, programs the kernel runs as root on the host.
	// Bubblewrap leaves it writable (it judges by the directory's mode), so
	// it is bound read-only here, and so is the SysRq trigger.
	a = append(a, "--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger")
	sized(l.TmpfsBytes, "1777", "/tmp")
	// /run is a fresh tmpfs: no host runtime socket or secret is visible,
	// and it holds the init binary and the credentials.
	sized(l.RunBytes, "0755", "/run")
	a = append(a, "--perms", "0755", "--dir", InsideRun)
	if l.Features.BindFD {
		a = append(a, "--ro-bind-fd", fd(l.InitFD), InsideInit)
	} else {
		a = append(a, "--ro-bind", l.InitPath, InsideInit)
	}
	if len(l.CredFiles) > 0 {
		a = append(a, "--perms", "0700", "--dir", govern.CredentialDir)
		for _, c := range l.CredFiles {
			a = append(a, "--perms", "0400", "--file", fd(c.FD), filepath.Join(govern.CredentialDir, c.Path))
		}
	}
	if l.Session != nil {
		for _, m := range l.Session.Mounts {
			if m.late() {
				a = m.args(a, l.Features)
			}
		}
	}
	a = append(a, "--remount-ro", "/run")
	// Covers before the roots, which stay reachable inside them; writable
	// only once everything inside is mounted, then read-only. What is put
	// back in a cover may have gone from the host since the plan: -try
	// skips it rather than fail the run.
	for _, c := range l.Covers {
		switch {
		case c.Link != "":
			a = append(a, "--symlink", c.Link, c.Path)
		case c.Reveal:
			a = append(a, "--ro-bind-try", c.Path, c.Path)
		default:
			if l.Features.TmpfsSize {
				size, perms := c.Size, c.Perms
				if size == 0 {
					size = 4096
				}
				if perms == 0 {
					perms = 0o111
				}
				a = append(a, "--size", strconv.FormatInt(size, 10), "--perms", fmt.Sprintf("%04o", perms))
			}
			a = append(a, "--tmpfs", c.Path)
		}
	}
	for _, r := range l.WorkspaceRoots {
		a = append(a, "--bind", r, r)
	}
	for _, r := range l.ReadOnlyRoots {
		a = append(a, "--ro-bind", r, r)
	}
	for _, w := range l.WriteBinds {
		a = append(a, "--bind", w, w)
	}
	for _, d := range l.Anchors {
		a = append(a, "--bind", d, d)
	}
	for _, p := range l.Protected {
		a = append(a, "--ro-bind", p, p)
	}
	for _, p := range l.Pins {
		a = append(a, "--perms", fmt.Sprintf("%04o", p.Perm), "--ro-bind-data", fd(p.FD), p.Path)
	}
	// Masks last: a deny path wins over a workspace root or a pin.
	for _, m := range l.Masks {
		if m.Dir {
			if l.Features.TmpfsSize {
				a = append(a, "--size", "4096", "--perms", "0000")
			}
			a = append(a, "--tmpfs", m.Path, "--remount-ro", m.Path)
		} else {
			a = append(a, "--ro-bind", "/dev/null", m.Path)
		}
	}
	for _, c := range l.Covers {
		if c.cover() {
			a = append(a, "--remount-ro", c.Path)
		}
	}
	if l.SeccompFD >= 0 {
		a = append(a, "--seccomp", fd(l.SeccompFD))
	}
	if l.BlockFD >= 0 {
		a = append(a, "--block-fd", fd(l.BlockFD))
	}
	if l.LifelineFD > 0 {
		a = append(a, "--json-status-fd", fd(l.LifelineFD))
	}
	a = append(a, "--info-fd", fd(l.InfoFD), "--chdir", l.Cwd, "--", InsideInit)
	return append(a, l.InitArgs...)
}
