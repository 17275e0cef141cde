package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// host builds a tree under a fresh directory the sandbox sees: a name
// ending in "/" is a directory, "name -> target" a symlink, anything else a
// file.
func host(t *testing.T, entries ...string) string {
	t.Helper()
	base := outsideTmp(t)
	for _, e := range entries {
		p := filepath.Join(base, strings.Split(e, " -> ")[0])
		switch name, target, link := strings.Cut(e, " -> "); {
		case link:
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.Symlink(target, p))
		case strings.HasSuffix(name, "/"):
			assert.NilError(t, os.MkdirAll(p, 0o755))
		default:
			write(t, p, name)
		}
	}
	return base
}

// heldUnder lists the held names under base as relative "dir/name".
func heldUnder(base string, held []heldName) []string {
	var out []string
	for _, h := range held {
		if p := filepath.Join(h.dir, h.name); within(base, p) && p != base {
			out = append(out, strings.TrimPrefix(p, base+"/"))
		}
	}
	slices.Sort(out)
	return out
}

func TestPlanMasks(t *testing.T) {
	t.Parallel()
	type want struct {
		covers   []CoverOp // paths relative to the base
		masks    []Mask
		held     []string
		writable []string
	}
	for _, tc := range []struct {
		name    string
		entries []string
		deny    []string // relative; a trailing "!" marks a public (credential) name
		roots   []string
		cwd     string
		max     int
		want    want
	}{
		{
			name:    "masked files and a masked directory share one cover; the other entries are put back, a symlink re-made; only the cover's directory and those above it are held",
			entries: []string{"home/.netrc", "home/.git-credentials", "home/.ssh/id_rsa", "home/.bashrc", "home/proj/", "home/.profile -> .bashrc"},
			deny:    []string{"home/.netrc!", "home/.git-credentials!", "home/.ssh!"},
			roots:   []string{"home/proj"},
			want: want{
				covers: []CoverOp{
					{Path: "home", Perms: 0o755, Size: 8192},
					{Path: "home/.bashrc", Reveal: true}, {Path: "home/.profile", Link: ".bashrc"}, {Path: "home/proj", Reveal: true},
				},
				held: []string{"home"},
			},
		},
		{
			name:    "a directory larger than the bound keeps its masks, each held",
			entries: []string{"etc/gw.yaml", "etc/a", "etc/b", "etc/c"},
			deny:    []string{"etc/gw.yaml"},
			roots:   []string{"ws"},
			max:     3,
			want:    want{masks: []Mask{{Path: "etc/gw.yaml"}}, held: []string{"etc", "etc/gw.yaml"}},
		},
		{
			name:    "a masked directory alone stays one tmpfs, held",
			entries: []string{"var/log/gw/audit.jsonl", "var/log/other"},
			deny:    []string{"var/log/gw"},
			roots:   []string{"ws"},
			want:    want{masks: []Mask{{Path: "var/log/gw", Dir: true}}, held: []string{"var", "var/log", "var/log/gw"}},
		},
		{
			name:    "a masked directory holding the workspace is covered with only the path to it; the files in it need no mask, a credential in the root keeps its own",
			entries: []string{"srv/g.yaml", "srv/policy.yaml", "srv/audit.jsonl", "srv/ws/.netrc", "srv/ws/src/"},
			deny:    []string{"srv/g.yaml", "srv/policy.yaml", "srv", "srv/ws/.netrc!"},
			roots:   []string{"srv/ws"},
			cwd:     "srv/ws/src",
			want: want{
				covers:   []CoverOp{{Path: "srv", Perms: 0o555}},
				masks:    []Mask{{Path: "srv/ws/.netrc"}},
				held:     []string{"srv", "srv/ws/.netrc"},
				writable: []string{"srv/ws/.netrc"},
			},
		},
		{
			name:    "inside a workspace root the masks stay, their directories anchored",
			entries: []string{"ws/.netrc", "ws/sub/.npmrc", "ws/sub/x"},
			deny:    []string{"ws/.netrc!", "ws/sub/.npmrc!"},
			roots:   []string{"ws"},
			want: want{
				masks:    []Mask{{Path: "ws/.netrc"}, {Path: "ws/sub/.npmrc"}},
				held:     []string{"ws", "ws/.netrc", "ws/sub", "ws/sub/.npmrc"},
				writable: []string{"ws/.netrc", "ws/sub/.npmrc"},
			},
		},
		{
			name:    "nested directories of masked files: the inner one is covered inside the outer, held by neither",
			entries: []string{"home/.npmrc", "home/.cargo/credentials.toml", "home/.cargo/bin/", "home/.local/x"},
			deny:    []string{"home/.npmrc!", "home/.cargo/credentials.toml!"},
			roots:   []string{"ws"},
			want: want{
				covers: []CoverOp{
					{Path: "home", Perms: 0o755, Size: 4096},
					{Path: "home/.cargo", Perms: 0o755, Size: 4096}, {Path: "home/.local", Reveal: true},
					{Path: "home/.cargo/bin", Reveal: true},
				},
				held: []string{"home"},
			},
		},
		{
			name:    "a masked path reached through a symlink: the symlink is held too, wherever it is",
			entries: []string{"store/netrc", "store/other", "home/.netrc -> ../store/netrc", "home/notes"},
			deny:    []string{"home/.netrc!"},
			roots:   []string{"ws"},
			want: want{
				covers: []CoverOp{{Path: "store", Perms: 0o755, Size: 4096}, {Path: "store/other", Reveal: true}},
				held:   []string{"home", "home/.netrc", "store"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := host(t, append(tc.entries, "ws/")...)
			abs := func(rel []string) []string {
				out := make([]string, len(rel))
				for i, r := range rel {
					out[i] = filepath.Join(base, r)
				}
				return out
			}
			var cands []candidate
			for _, d := range tc.deny {
				p, public := strings.CutSuffix(d, "!")
				c := candidate{path: filepath.Join(base, p), what: whatOwn}
				if public {
					c = candidate{filepath.Join(base, p), whatCredential, filepath.Join(base, p)}
				}
				cands = append(cands, c)
			}
			roots := abs(tc.roots)
			cwd := roots[0]
			if tc.cwd != "" {
				cwd = filepath.Join(base, tc.cwd)
			}
			got, err := planMasks(resolveDenied(cands, roots), maskEnv{roots: roots, writable: roots, cwd: cwd, maxEntries: tc.max})
			assert.NilError(t, err)
			rel := func(p string) string { return strings.TrimPrefix(p, base+"/") }
			for i := range got.covers {
				got.covers[i].Path = rel(got.covers[i].Path)
			}
			for i := range got.masks {
				got.masks[i].Path = rel(got.masks[i].Path)
			}
			for i := range got.inWritable {
				got.inWritable[i] = rel(got.inWritable[i])
			}
			if d := cmp.Diff(tc.want.covers, got.covers); d != "" {
				t.Errorf("covers (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want.masks, got.masks); d != "" {
				t.Errorf("masks (-want +got):\n%s", d)
			}
			assert.Check(t, is.DeepEqual(heldUnder(base, got.held), tc.want.held))
			assert.Check(t, is.DeepEqual(got.inWritable, tc.want.writable))
			// Every directory above is held up to /, and what a watch
			// recognises is what the plan saw.
			assert.Check(t, slices.ContainsFunc(got.held, func(h heldName) bool { return h.dir == "/" }), "%v", got.held)
			for _, h := range got.held {
				now, err := os.Lstat(filepath.Join(h.dir, h.name))
				assert.Check(t, err == nil && h.was != nil && os.SameFile(now, h.was), "%s/%s", h.dir, h.name)
			}
		})
	}
}

// What a message may say: a credential store by its path, the gateway's
// own files never by theirs.
func TestPlanMasksLabels(t *testing.T) {
	t.Parallel()
	base := host(t, "etc/gw.yaml", "etc/a", "etc/b", "home/.netrc", "home/a", "home/b", "ws/")
	cands := []candidate{{path: base + "/etc/gw.yaml", what: whatOwn}, {base + "/home/.netrc", whatCredential, base + "/home/.netrc"}}
	roots := []string{base + "/ws"}
	got, err := planMasks(resolveDenied(cands, roots), maskEnv{roots: roots, writable: roots, cwd: roots[0], maxEntries: 2})
	assert.NilError(t, err)
	labels := map[string][]string{}
	for _, h := range got.held {
		labels[strings.TrimPrefix(filepath.Join(h.dir, h.name), base+"/")] = h.labels
	}
	assert.Check(t, is.DeepEqual(labels["etc/gw.yaml"], []string{"one of the gateway's own files"}))
	assert.Check(t, is.DeepEqual(labels["home/.netrc"], []string{"a credential store (" + base + "/home/.netrc)"}))
	assert.Check(t, is.DeepEqual(labels[""], []string(nil)))
	for _, h := range got.held {
		for _, l := range h.labels {
			assert.Check(t, !strings.Contains(l, "gw.yaml"), l)
		}
	}
	msg := replacedMessage(labels["etc/gw.yaml"])
	assert.Check(t, !strings.Contains(msg, base), msg)
	assert.Check(t, is.Contains(msg, "one of the gateway's own files"))
}

// A working directory inside a masked directory inside a root runs
// nothing, and the refusal does not name the gateway's directory.
func TestPlanMasksRefusesMaskedCwd(t *testing.T) {
	t.Parallel()
	base := host(t, "ws/state/sub/", "ws/src/")
	roots := []string{base + "/ws"}
	ds := resolveDenied([]candidate{{path: base + "/ws/state", what: whatOwn}}, roots)
	_, err := planMasks(ds, maskEnv{roots: roots, writable: roots, cwd: base + "/ws/state/sub"})
	assert.ErrorContains(t, err, "working directory "+base+"/ws/state/sub is inside one of the gateway's own directories, which the sandbox masks")
	assert.Check(t, !strings.Contains(strings.TrimPrefix(err.Error(), "working directory "+base+"/ws/state/sub"), base))
	// Elsewhere in the root it is one directory mask.
	got, err := planMasks(ds, maskEnv{roots: roots, writable: roots, cwd: base + "/ws/src"})
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got.masks, []Mask{{Path: base + "/ws/state", Dir: true}}))
}

// The settings file's covers: what they hide needs no mask, an allowRead
// cannot put back what the deny set masks, and a directory that meets one
// of them is not covered for masked files.
func TestPlanMasksWithSettings(t *testing.T) {
	t.Parallel()
	base := host(t, "home/v/.netrc", "home/v/notes", "home/w/.netrc", "home/w/.ssh/k", "opt/gw.yaml", "opt/x", "ws/")
	roots := []string{base + "/ws"}
	settings := []CoverOp{{Path: base + "/home"}, {Path: base + "/home/w", Reveal: true}, {Path: base + "/home/w/.ssh", Reveal: true}}
	cands := denyCandidates([]string{base + "/home/v", base + "/home/w"}, []string{base + "/opt/gw.yaml"})
	got, err := planMasks(resolveDenied(cands, roots), maskEnv{roots: roots, writable: roots, cwd: roots[0], settings: settings})
	assert.NilError(t, err)
	rel := func(p string) string { return strings.TrimPrefix(p, base+"/") }
	var covers, masks []string
	for _, c := range got.covers {
		covers = append(covers, rel(c.Path)+map[bool]string{true: " reveal", false: ""}[c.Reveal])
	}
	for _, m := range got.masks {
		masks = append(masks, rel(m.Path))
	}
	assert.Check(t, is.DeepEqual(covers, []string{"home", "opt", "home/w reveal", "opt/x reveal"}))
	assert.Check(t, is.DeepEqual(masks, []string{"home/w/.netrc", "home/w/.ssh"}))
}
