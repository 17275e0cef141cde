package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// guard watches the protected names a run could create (see protection):
// the moment one appears it is moved aside (quarantined) and the run is
// killed. inotify tells of a creation after it happened, so there is a
// window, the time the kernel takes to wake this goroutine, in which a
// host program could read the new entry; nothing else can prevent the
// creation of a name that does not exist without creating it on the host.
//
// It also watches the host entries the run's masks and covers sit on
// (held names, see masks.go): the first change of one (created, renamed
// over or away, deleted) kills the run, before it can read what replaced
// a masked path; nothing is moved, it is the host's.
type guard struct {
	f     *os.File
	fd    int // f's descriptor, non-blocking: drained once the reader stopped
	wds   map[int32]watchedDir
	mu    sync.Mutex
	kill  func() // set once the sandbox exists
	hits  []quarantined
	fired bool
	// closing: the run is over, a hit kills nothing.
	closing bool
	// done is closed when read returns; nil until it runs.
	done chan struct{}
}

type watchedDir struct {
	watch
	fd int // O_PATH descriptor of the directory: what renames are made in
}

// quarantined is one protected name a run created, and where it went;
// or, with Replaced, a held name the host changed, and what the masks it
// held are.
type quarantined struct {
	Path, MovedTo string
	Err           error
	Replaced      []string
}

// protectedEvents and heldEvents are what a watch reports of a protected
// name (its creation) and of a held one (any change).
const (
	protectedEvents = unix.IN_CREATE | unix.IN_MOVED_TO
	heldEvents      = protectedEvents | unix.IN_MOVED_FROM | unix.IN_DELETE
)

// startGuard watches ws. A run with nothing to watch gets a nil guard.
func startGuard(ws []watch) (*guard, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	g := &guard{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, wds: map[int32]watchedDir{}}
	for _, w := range ws {
		mask := uint32(unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_MASK_ADD)
		if len(w.names) > 0 {
			mask |= protectedEvents
		}
		if len(w.held) > 0 {
			mask |= heldEvents
		}
		wd, err := unix.InotifyAddWatch(fd, w.dir, mask)
		if err != nil && len(w.names) == 0 {
			// Only held names: a directory the gateway's user cannot read
			// cannot be watched (docs/sandbox.md says what that leaves).
			continue
		}
		if err != nil {
			g.close()
			return nil, fmt.Errorf("watching %s: %w", w.dir, err)
		}
		wdir, ok := g.wds[int32(wd)]
		if !ok { // another path to a directory already watched shares its watch
			dfd, err := unix.Open(w.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				g.close()
				return nil, fmt.Errorf("watching %s: %w", w.dir, err)
			}
			wdir = watchedDir{watch: watch{dir: w.dir}, fd: dfd}
		}
		wdir.names = append(slices.Clone(wdir.names), w.names...)
		if len(w.held) > 0 {
			wdir.held = maps.Clone(wdir.held)
			if wdir.held == nil {
				wdir.held = map[string]heldName{}
			}
			maps.Copy(wdir.held, w.held)
		}
		g.wds[int32(wd)] = wdir
		// A name created between the plan and the watch counts too, and a
		// held name must still be what the plan saw.
		for _, n := range w.names {
			if _, err := os.Lstat(filepath.Join(w.dir, n)); err == nil {
				g.hit(wdir, n, protectedEvents)
			}
		}
		for n, h := range w.held {
			now, err := os.Lstat(filepath.Join(w.dir, n))
			if (err == nil) != (h.was != nil) || err == nil && !os.SameFile(now, h.was) {
				g.hit(wdir, n, heldEvents)
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
			return // closing
		}
		g.events(buf[:n])
	}
}

// drain handles what is still queued once the reader stopped: a change
// that made bubblewrap fail is reported as what it was.
func (g *guard) drain() {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := unix.Read(g.fd, buf)
		if err != nil || n <= 0 {
			return
		}
		g.events(buf[:n])
	}
}

func (g *guard) events(buf []byte) {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
		off += unix.SizeofInotifyEvent + int(ev.Len)
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			// Events were lost: a protected name may have appeared unseen,
			// a held one changed. Closed: the run ends.
			g.hit(watchedDir{}, "", 0)
			continue
		}
		if w, ok := g.wds[ev.Wd]; ok && ev.Len > 0 { // (an event of the directory itself has no name)
			g.hit(w, string(nameBytes[:clen(nameBytes)]), ev.Mask)
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

// hit kills the run for an event of mask on name in w: a held name
// changed (nothing is moved: it is the host's), or a protected name
// appeared, which is first moved aside. Other events are not the run's.
func (g *guard) hit(w watchedDir, name string, mask uint32) {
	var q quarantined
	h, held := w.held[name]
	switch {
	case name == "":
		q = quarantined{Path: "(inotify queue overflow: events lost)"}
	case held && mask&heldEvents != 0:
		q = quarantined{Replaced: h.labels}
	case mask&protectedEvents != 0 && slices.Contains(w.names, name):
		q = quarantine(w, name)
	default:
		return
	}
	g.mu.Lock()
	g.hits = append(g.hits, q)
	g.fired = true
	kill := g.kill
	if g.closing {
		kill = nil // the sandbox is gone (and its pid may not be its own)
	}
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

// close stops watching and returns every hit, those still queued too.
func (g *guard) close() []quarantined {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	g.closing = true
	g.mu.Unlock()
	if g.done != nil {
		if err := g.f.SetReadDeadline(time.Now()); err != nil {
			g.f.Close() // (not pollable: closing is what ends the read)
			<-g.done
		} else {
			<-g.done
			g.drain()
		}
	}
	g.f.Close()
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
		if q.Replaced != nil {
			for _, l := range q.Replaced {
				res.MaskReplaced = appendNew(res.MaskReplaced, l)
			}
			continue
		}
		created = appendNew(created, q.Path)
	}
	res.ProtectedCreated = created
	res.ProtectedModified = changed
}

// protectedKillMessage says what the run created, where it went, and why
// it was stopped; or which masked paths the host replaced.
func protectedKillMessage(hits []quarantined) string {
	var parts, replaced []string
	for _, q := range hits {
		switch {
		case q.Replaced != nil:
			for _, l := range q.Replaced {
				replaced = appendNew(replaced, l)
			}
		case q.Err != nil:
			parts = append(parts, fmt.Sprintf("%s (could not be moved aside: %v; remove it before running git or opening the project)", q.Path, q.Err))
		case q.MovedTo != "":
			parts = append(parts, fmt.Sprintf("%s (moved to %s)", q.Path, q.MovedTo))
		default:
			parts = append(parts, q.Path)
		}
	}
	var msgs []string
	if len(replaced) > 0 {
		msgs = append(msgs, replacedMessage(replaced))
	}
	if len(parts) > 0 {
		msgs = append(msgs, "killed: the command created "+strings.Join(parts, ", ")+
			", a path a program on the host reads its configuration or commands from; no run may create one. Ask the operator to create it if it is needed")
	}
	return strings.Join(msgs, "; ")
}
