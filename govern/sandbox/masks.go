package sandbox

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Masking the deny set without depending on the host's inodes.
//
// A mount sits on a dentry. Linux detaches a mount of another mount
// namespace whose mount point is renamed over or unlinked on the host, so a
// file masked by a bind of /dev/null over it is unmasked the moment an
// editor, a configuration manager or git's credential store replaces it by
// rename. So a masked file is hidden through its directory where that is
// sound: the directory gets an empty tmpfs (a cover) and every other entry
// of it is put back (bound read-only, or re-created when it is a symlink);
// the masked names are simply absent, and a rename inside the directory
// changes nothing for the run. A masked directory that holds a workspace
// root is covered the same way, with only the paths to the roots inside.
// Whatever still sits on a host dentry (a mask that stayed a mask, a cover)
// is watched, with every directory above it, and the first change of one
// of those names on the host kills the run (see guard).

// maxCoverEntries bounds the directories hidden through a cover: each
// entry put back is one bind for bubblewrap, which re-reads the mount table
// after every bind (measured in BenchmarkMaskCover: see docs/sandbox.md).
// A larger directory keeps its file masks, watched.
const maxCoverEntries = 32

// coverEntries is the bound runs use: maxCoverEntries, but for
// BenchmarkMaskCover, which compares runs with and without covers.
var coverEntries = maxCoverEntries

// maskEnv is what the mask planner needs of the run, resolved.
type maskEnv struct {
	roots    []string  // every workspace root, writable or not: bound after the covers
	writable []string  // the writable roots and write binds
	cwd      string    // the working directory, resolved
	settings []CoverOp // the settings file's covers and reveals
	// maxEntries bounds a covered directory: 0 is maxCoverEntries, less
	// is no cover at all.
	maxEntries int
}

// maskPlan is how one run hides its deny set.
type maskPlan struct {
	// covers are the settings file's covers and reveals (less the reveals
	// the deny set takes back) and the deny set's, in mount order.
	covers []CoverOp
	// masks stay masks: mounted last, on the host's entries.
	masks []Mask
	// held are the host entries the run's masks and covers sit on, and
	// every directory above them: a change of one kills the run.
	held []heldName
	// inWritable are the masks inside the writable parts: their
	// directories are anchored, so that the run itself cannot rename them.
	inWritable []string
}

// heldName is one entry of a directory on the host that a mount of the
// run sits on or below.
type heldName struct {
	dir, name string
	labels    []string    // what the masks it holds are, for a message
	was       os.FileInfo // what it was at plan time; nil: absent
}

// planMasks plans, as the calling thread sees the host, how ds are hidden
// in a run. It refuses a working directory inside a masked directory.
func planMasks(ds []denied, env maskEnv) (maskPlan, error) {
	if env.maxEntries == 0 {
		env.maxEntries = maxCoverEntries
	}
	inRoot := func(x string) bool { return rootOf(env.roots, x) != "" }
	// The deny set wins over the settings file's allowRead.
	settings := slices.DeleteFunc(slices.Clone(env.settings), func(c CoverOp) bool {
		return c.Reveal && slices.ContainsFunc(ds, func(d denied) bool { return within(d.Path, c.Path) })
	})
	// What a settings cover hides already needs no mask.
	ds = slices.DeleteFunc(slices.Clone(ds), func(d denied) bool { return hiddenByCovers(settings, env.roots, d.Path) })
	// A masked directory that holds a workspace root is covered; one in a
	// root that holds the working directory runs nothing.
	holding := map[string]bool{}
	for _, d := range ds {
		switch {
		case !d.Dir:
		case inRoot(d.Path):
			if within(d.Path, env.cwd) {
				return maskPlan{}, fmt.Errorf("working directory %s is inside %s, which the sandbox masks: run the command elsewhere", env.cwd, d.label())
			}
		case slices.ContainsFunc(env.roots, func(r string) bool { return within(d.Path, r) }):
			holding[d.Path] = true
		}
	}
	ds = withoutNested(ds, func(dir, p string) bool { return holding[dir] && inRoot(p) })

	plan := maskPlan{}
	var ops []CoverOp
	for _, d := range ds {
		if holding[d.Path] {
			// Crossable and listable: it shows the paths to the roots,
			// nothing else.
			ops = append(ops, CoverOp{Path: d.Path, Perms: 0o555})
		}
	}
	// Masked files are hidden through their directory where that is sound.
	byDir := map[string][]denied{}
	for _, d := range ds {
		if !holding[d.Path] {
			byDir[filepath.Dir(d.Path)] = append(byDir[filepath.Dir(d.Path)], d)
		}
	}
	covered := map[string]coverDir{}
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		if !slices.ContainsFunc(byDir[dir], func(d denied) bool { return !d.Dir }) {
			continue // a directory mask alone is one tmpfs: cheaper than any cover
		}
		if c, ok := env.coverable(dir, settings); ok {
			covered[dir] = c
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(covered)) {
		c := covered[dir]
		masked := map[string]bool{}
		for _, d := range byDir[dir] {
			masked[filepath.Base(d.Path)] = true
		}
		links := 0
		for _, e := range c.entries {
			p := filepath.Join(dir, e.name)
			switch {
			case masked[e.name], holding[p]:
			case e.link != "":
				ops = append(ops, CoverOp{Path: p, Link: e.link})
				links++
			case !isCovered(covered, p):
				ops = append(ops, CoverOp{Path: p, Reveal: true})
			}
		}
		// Long symlink targets take a page each.
		ops = append(ops, CoverOp{Path: dir, Perms: c.perm, Size: int64(1+links) * 4096})
	}
	for _, d := range ds {
		if !holding[d.Path] {
			if !isCovered(covered, filepath.Dir(d.Path)) {
				plan.masks = append(plan.masks, d.Mask)
				if rootOf(env.writable, d.Path) != "" {
					plan.inWritable = append(plan.inWritable, d.Path)
				}
			}
		}
	}
	plan.covers = sortCovers(append(settings, ops...))

	// What sits on the host's entries is watched, with every directory
	// above it: a directory above renamed away takes the mount with it.
	h := holds{plan: &plan, env: env, at: map[string]int{}}
	for _, d := range ds {
		switch {
		case holding[d.Path]:
			h.chain(d.Path, d.label())
		case isCovered(covered, filepath.Dir(d.Path)):
			h.chain(filepath.Dir(d.Path), d.label())
		default:
			h.chain(d.Path, d.label())
		}
		for _, n := range d.named {
			if n != d.Path {
				h.lexical(n, d.label()) // a symlink on the way can be re-pointed
			}
		}
	}
	return plan, nil
}

func isCovered(covered map[string]coverDir, dir string) bool {
	_, ok := covered[dir]
	return ok
}

// coverDir is a directory hidden through a cover: its mode and entries.
type coverDir struct {
	perm    os.FileMode
	entries []coverEntry
}

type coverEntry struct {
	name string
	link string // a symlink's target
}

// coverable reads dir for a cover: not /, not inside a workspace root
// (bound after the covers, a root would hide it), clear of the settings
// file's covers, listable by the sandbox's user and at most maxEntries
// long.
func (env maskEnv) coverable(dir string, settings []CoverOp) (coverDir, bool) {
	if env.maxEntries < 0 || dir == "/" || rootOf(env.roots, dir) != "" || slices.ContainsFunc(settings, func(c CoverOp) bool {
		return within(c.Path, dir) || within(dir, c.Path)
	}) {
		return coverDir{}, false
	}
	f, err := os.Open(dir)
	if err != nil {
		return coverDir{}, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.IsDir() {
		return coverDir{}, false
	}
	names, err := f.Readdirnames(env.maxEntries + 1)
	if err != nil && err != io.EOF || len(names) > env.maxEntries {
		return coverDir{}, false
	}
	slices.Sort(names)
	c := coverDir{perm: st.Mode().Perm()}
	for _, n := range names {
		fi, err := os.Lstat(filepath.Join(dir, n))
		if err != nil {
			continue // gone: nothing to put back
		}
		e := coverEntry{name: n}
		if fi.Mode()&os.ModeSymlink != 0 {
			if e.link, err = os.Readlink(filepath.Join(dir, n)); err != nil {
				continue
			}
		}
		c.entries = append(c.entries, e)
	}
	return c, true
}

// holds collects the plan's held names.
type holds struct {
	plan *maskPlan
	env  maskEnv
	at   map[string]int // dir + "\x00" + name -> index in plan.held
}

// chain holds real (resolved) and every directory above it, where the
// sandbox sees the host's entry.
func (h holds) chain(real, label string) {
	for a := real; a != "/"; a = filepath.Dir(a) {
		h.add(filepath.Dir(a), filepath.Base(a), label)
	}
}

// lexical holds each component of a path as written that a symlink may
// re-point, outside the run's writable parts (inside, the run itself may).
func (h holds) lexical(p, label string) {
	for a := p; a != "/"; a = filepath.Dir(a) {
		dir, err := filepath.EvalSymlinks(filepath.Dir(a))
		if err != nil {
			continue
		}
		if rootOf(h.env.writable, filepath.Join(dir, filepath.Base(a))) == "" {
			h.add(dir, filepath.Base(a), label)
		}
	}
}

func (h holds) add(dir, name, label string) {
	p := filepath.Join(dir, name)
	if !h.plan.onHost(h.env.roots, p) {
		return
	}
	key := dir + "\x00" + name
	if i, ok := h.at[key]; ok {
		if !slices.Contains(h.plan.held[i].labels, label) {
			h.plan.held[i].labels = append(h.plan.held[i].labels, label)
		}
		return
	}
	was, _ := os.Lstat(p)
	h.at[key] = len(h.plan.held)
	h.plan.held = append(h.plan.held, heldName{dir: dir, name: name, labels: []string{label}, was: was})
}

// onHost reports whether the sandbox sees x as the host's entry, so that a
// change of it on the host reaches the run: not inside a directory mask,
// and inside a workspace root (bound after the covers) or under no cover
// but a reveal. (A root itself is where its bind sits.)
func (p *maskPlan) onHost(roots []string, x string) bool {
	if slices.ContainsFunc(p.masks, func(m Mask) bool { return m.Dir && m.Path != x && within(m.Path, x) }) {
		return false
	}
	if rootOf(roots, x) != "" && !slices.Contains(roots, x) {
		return true
	}
	host := true
	for _, c := range p.covers { // ancestors first: the last match is the deepest
		if c.Path != x && within(c.Path, x) {
			host = !c.cover()
		}
	}
	return host
}

// sortCovers puts ops in mount order: a directory's cover before what is
// mounted or made inside it.
func sortCovers(ops []CoverOp) []CoverOp {
	slices.SortStableFunc(ops, func(a, b CoverOp) int {
		if d := depth(a.Path) - depth(b.Path); d != 0 {
			return d
		}
		return boolInt(!a.cover()) - boolInt(!b.cover())
	})
	return ops
}

// maskWatches turns held names into the guard's watches, a directory
// once.
func maskWatches(held []heldName) []watch {
	var out []watch
	at := map[string]int{}
	for _, h := range held {
		i, ok := at[h.dir]
		if !ok {
			i = len(out)
			at[h.dir] = i
			out = append(out, watch{dir: h.dir, held: map[string]heldName{}})
		}
		out[i].held[h.name] = h
	}
	return out
}

// maskedNote says why a pinned script is not bound.
func maskedNote(path string, bySettings bool) string {
	if bySettings {
		return fmt.Sprintf("pinned script %s is inside a path the settings file denies reading: not bound", path)
	}
	return fmt.Sprintf("pinned script %s is masked in the sandbox: not bound", path)
}

// replacedMessage says which masked paths were replaced on the host.
func replacedMessage(labels []string) string {
	const most = 4
	shown := labels
	more := ""
	if len(labels) > most {
		shown, more = labels[:most], fmt.Sprintf(" and %d more", len(labels)-most)
	}
	return "killed: a path the sandbox masks was replaced on the host while the command ran (" + strings.Join(shown, ", ") + more +
		"); the run was stopped at once so that it could not read the new one. This was a change on the host, not the command's: run the command again"
}
