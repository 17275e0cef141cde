package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// guard watches the protected names a run could create (see protection):
// the moment one appears it is moved aside (quarantined) and the run is
// killed. inotify tells of a creation after it happened, so there is a
// window, the time the kernel takes to wake this goroutine, in which a
// host program could read the new entry; nothing else can prevent the
// creation of a name that does not exist without creating it on the host.
type guard struct {
	f     *os.File
	wds   map[int32]watchedDir
	mu    sync.Mutex
	kill  func() // set once the sandbox exists
	hits  []quarantined
	fired bool
	// done is closed when read returns; nil until it runs.
	done chan struct{}
}

type watchedDir struct {
	watch
	fd int // O_PATH descriptor of the directory: what renames are made in
}

// quarantined is one protected name a run created, and where it went.
type quarantined struct {
	Path, MovedTo string
	Err           error
}

// startGuard watches ws. A run with nothing to watch gets a nil guard.
func startGuard(ws []watch) (*guard, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	g := &guard{f: os.NewFile(uintptr(fd), "inotify"), wds: map[int32]watchedDir{}}
	for _, w := range ws {
		dfd, err := unix.Open(w.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			g.close()
			return nil, fmt.Errorf("watching %s: %w", w.dir, err)
		}
		wd, err := unix.InotifyAddWatch(fd, w.dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
		if err != nil {
			unix.Close(dfd)
			g.close()
			return nil, fmt.Errorf("watching %s: %w", w.dir, err)
		}
		g.wds[int32(wd)] = watchedDir{watch: w, fd: dfd}
		// A name created between the plan and the watch counts too.
		for _, n := range w.names {
			if _, err := os.Lstat(filepath.Join(w.dir, n)); err == nil {
				g.hit(g.wds[int32(wd)], n)
			}
		}
	}
	g.done = make(chan struct{})
	go g.read()
	return g, nil
}

// armed gives the guard the way to kill the sandbox; a hit before it was
// armed kills at once.
func (g *guard) armed(kill func()) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.kill = kill
	fired := g.fired
	g.mu.Unlock()
	if fired {
		kill()
	}
}

func (g *guard) read() {
	defer close(g.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := g.f.Read(buf)
		if err != nil {
			return // closed
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				// Events were lost: a protected name may have appeared
				// unseen. Closed: the run ends.
				g.hit(watchedDir{}, "")
				continue
			}
			w, ok := g.wds[ev.Wd]
			if !ok {
				continue
			}
			name := string(nameBytes[:clen(nameBytes)])
			if slices.Contains(w.names, name) {
				g.hit(w, name)
			}
		}
	}
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// hit moves the new entry aside, then kills the run.
func (g *guard) hit(w watchedDir, name string) {
	q := quarantined{Path: "(inotify queue overflow: events lost)"}
	if name != "" {
		q = quarantine(w, name)
	}
	g.mu.Lock()
	g.hits = append(g.hits, q)
	g.fired = true
	kill := g.kill
	g.mu.Unlock()
	if kill != nil {
		kill()
	}
}

// quarantine renames dir/name to a name no program reads, beside it.
func quarantine(w watchedDir, name string) quarantined {
	var b [6]byte
	rand.Read(b[:])
	to := name + ".mitrity-quarantine-" + hex.EncodeToString(b[:])
	q := quarantined{Path: filepath.Join(w.dir, name), MovedTo: filepath.Join(w.dir, to)}
	if err := unix.Renameat2(w.fd, name, w.fd, to, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.ENOENT) {
			q.MovedTo = "" // gone already (removed, or renamed away)
		} else {
			q.Err = err
		}
	}
	return q
}

// close stops watching and returns every hit.
func (g *guard) close() []quarantined {
	if g == nil {
		return nil
	}
	g.f.Close()
	if g.done != nil {
		<-g.done
	}
	for _, w := range g.wds {
		unix.Close(w.fd)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hits
}

// reportProtected fills in what the run did to protected paths: those it
// created (quarantined, or reported), and those whose content changed.
// The comparison is made as the sandbox's user, as the plan was.
func (e *execution) reportProtected(res *Result, hits []quarantined) {
	var created, changed []string
	e.asSandboxUser(func() {
		created = e.prot.created()
		changed = e.prot.changed()
	})
	for _, q := range hits {
		created = appendNew(created, q.Path)
	}
	res.ProtectedCreated = created
	res.ProtectedModified = changed
}

// protectedKillMessage says what the run created, where it went, and why
// it was stopped.
func protectedKillMessage(hits []quarantined) string {
	var parts []string
	for _, q := range hits {
		switch {
		case q.Err != nil:
			parts = append(parts, fmt.Sprintf("%s (could not be moved aside: %v; remove it before running git or opening the project)", q.Path, q.Err))
		case q.MovedTo != "":
			parts = append(parts, fmt.Sprintf("%s (moved to %s)", q.Path, q.MovedTo))
		default:
			parts = append(parts, q.Path)
		}
	}
	return "killed: the command created " + strings.Join(parts, ", ") +
		", a path a program on the host reads its configuration or commands from; no run may create one. Ask the operator to create it if it is needed"
}
