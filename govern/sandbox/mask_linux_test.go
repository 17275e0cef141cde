package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

// Attacks on the masks from the host's side: the gateway's own files and
// the credential stores replaced by rename (as editors, configuration
// managers and git's credential store do) while a run reads them, and laid
// out around the workspace as a host service lays them out. Each runs as
// every identity and checks what the run printed and the host afterwards.

// replaceByRename writes data beside path and renames it over path.
func replaceByRename(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	assert.NilError(t, os.WriteFile(tmp, []byte(data), 0o644))
	assert.NilError(t, os.Rename(tmp, path))
}

// fill puts n more entries in dir: past maxCoverEntries it cannot be
// hidden through a cover, and its masks stay masks.
func fill(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("filler-%03d", i)), nil, 0o644))
	}
}

// A run reads a masked path over and over while the host replaces it by
// rename, as an editor saves it, ten times: the run never prints the new
// contents. Where the file's directory can be covered, the run does not
// notice at all. Where it cannot (more entries than the bound), or where
// the directory itself is renamed away, the first change kills the run
// (what that one change put there may be read in the guard's window, which
// is logged) and the result says which masked path, without the host path
// of a gateway's own file.
func TestAttackMaskReplacedByRename(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, tc := range []struct {
		name string
		// plant lays the host out under base and returns the masked path
		// and how the spec names it.
		plant   func(t *testing.T, base string) (path string, spec func(*Spec))
		replace func(t *testing.T, path, data string)
		killed  bool
		label   func(path string) string
	}{
		{
			name: "the gateway's config, its directory covered",
			plant: func(t *testing.T, base string) (string, func(*Spec)) {
				p := filepath.Join(base, "etc", "gateway.yaml")
				write(t, p, "OLD-SECRET\n")
				write(t, filepath.Join(base, "etc", "notes"), "notes\n")
				return p, func(s *Spec) { s.DenyPaths = []string{p} }
			},
			replace: replaceByRename,
		},
		{
			name: "a home's .netrc, the home covered",
			plant: func(t *testing.T, base string) (string, func(*Spec)) {
				home := filepath.Join(base, "home")
				write(t, filepath.Join(home, ".netrc"), "OLD-SECRET\n")
				write(t, filepath.Join(home, ".bashrc"), "# rc\n")
				return filepath.Join(home, ".netrc"), func(s *Spec) { s.DenyHomes = []string{home} }
			},
			replace: replaceByRename,
		},
		{
			name: "the gateway's config in a directory too large to cover: killed, its path not told",
			plant: func(t *testing.T, base string) (string, func(*Spec)) {
				p := filepath.Join(base, "etc", "gateway.yaml")
				write(t, p, "OLD-SECRET\n")
				fill(t, filepath.Dir(p), maxCoverEntries)
				return p, func(s *Spec) { s.DenyPaths = []string{p} }
			},
			replace: replaceByRename,
			killed:  true,
			label:   func(string) string { return "one of the gateway's own files" },
		},
		{
			name: "a home's .netrc in a home too large to cover: killed, the credential store named",
			plant: func(t *testing.T, base string) (string, func(*Spec)) {
				home := filepath.Join(base, "home")
				write(t, filepath.Join(home, ".netrc"), "OLD-SECRET\n")
				fill(t, home, maxCoverEntries)
				return filepath.Join(home, ".netrc"), func(s *Spec) { s.DenyHomes = []string{home} }
			},
			replace: replaceByRename,
			killed:  true,
			label:   func(p string) string { return "a credential store (" + p + ")" },
		},
		{
			name: "the covered directory itself renamed away and made again: killed",
			plant: func(t *testing.T, base string) (string, func(*Spec)) {
				p := filepath.Join(base, "etc", "gateway.yaml")
				write(t, p, "OLD-SECRET\n")
				return p, func(s *Spec) { s.DenyPaths = []string{p} }
			},
			replace: func(t *testing.T, p, data string) {
				dir := filepath.Dir(p)
				if _, err := os.Stat(dir + ".old"); err == nil {
					return // once is the attack
				}
				assert.NilError(t, os.Rename(dir, dir+".old"))
				time.Sleep(100 * time.Millisecond) // the guard has killed the run by now
				write(t, p, data)
			},
			killed: true,
			label:  func(string) string { return "one of the gateway's own files" },
		},
		{
			name: "a masked directory renamed away and made again: killed",
			plant: func(t *testing.T, base string) (string, func(*Spec)) {
				p := filepath.Join(base, "state", "token")
				write(t, p, "OLD-SECRET\n")
				return p, func(s *Spec) { s.DenyPaths = []string{filepath.Dir(p)} }
			},
			replace: func(t *testing.T, p, data string) {
				dir := filepath.Dir(p)
				if _, err := os.Stat(dir + ".old"); err == nil {
					return
				}
				assert.NilError(t, os.Rename(dir, dir+".old"))
				time.Sleep(100 * time.Millisecond)
				write(t, p, data)
			},
			killed: true,
			label:  func(string) string { return "one of the gateway's own directories" },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachIdentity(t, func(t *testing.T, id identity) {
				base := outsideTmp(t)
				ws := filepath.Join(base, "ws")
				assert.NilError(t, os.Mkdir(ws, 0o755))
				path, named := tc.plant(t, base)
				// Reads every 20 ms for 3 s, then says it finished.
				s := shellSpec(ws, fmt.Sprintf(`for i in $(seq 150); do printf "%%s:" "$EPOCHREALTIME"; cat %q 2>/dev/null; echo; sleep 0.02; done; echo finished`, path))
				named(s)
				done := make(chan runOut, 1)
				go func() { done <- id.run(t, s) }()
				time.Sleep(700 * time.Millisecond) // the run is reading
				var firstChange time.Time
				for i := 0; i < 10; i++ {
					// Where the guard stops the run, it does so after the
					// first change, in the time inotify takes: what that
					// change put there is counted, not asserted (see
					// docs/sandbox.md); what came after must never be read.
					marker := "NEW-SECRET"
					if tc.killed && i == 0 {
						marker = "FIRST-REPLACEMENT"
						firstChange = time.Now()
					}
					tc.replace(t, path, fmt.Sprintf("%s-%d\n", marker, i))
					time.Sleep(50 * time.Millisecond)
				}
				r := <-done
				// Each read is "<when it started>:<what it read>". Where
				// the mask sits on the file itself, the kernel detaches it
				// inside the host's rename, before the new name is in
				// place: for that moment the path shows the old contents
				// (docs/sandbox.md). Such a read, in the first change's
				// window, is counted, not asserted; any other read of the
				// old contents is the mask failing.
				for line := range strings.Lines(r.stdout) {
					when, what, _ := strings.Cut(strings.TrimSpace(line), ":")
					sec, _ := strconv.ParseFloat(when, 64)
					at := time.UnixMicro(int64(sec * 1e6))
					inWindow := tc.killed && !firstChange.IsZero() && at.After(firstChange.Add(-50*time.Millisecond))
					switch {
					case strings.Contains(what, "FIRST-REPLACEMENT"):
						t.Logf("read in the guard's window: %q", line)
					case strings.Contains(what, "OLD-SECRET") && inWindow:
						t.Logf("read in the rename's window: %q", line)
					default:
						assert.Check(t, !strings.Contains(what, "SECRET"), "the run read a masked file:\n%s", r.stdout)
					}
				}
				assert.Check(t, !strings.Contains(r.stderr, "SECRET"), r.stderr)
				if !tc.killed {
					assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
					assert.Check(t, strings.HasSuffix(r.stdout, ":\nfinished\n"), r.stdout)
					assert.Check(t, is.Len(r.MaskReplaced, 0))
					return
				}
				assert.Check(t, is.Equal(r.Status, govern.StatusKilled), "%s\n%s", r.Message, r.stdout)
				assert.Check(t, is.DeepEqual(r.MaskReplaced, []string{tc.label(path)}))
				assert.Check(t, is.Contains(r.Message, "was replaced on the host"))
				assert.Check(t, is.Contains(r.Message, tc.label(path)))
				if strings.Contains(tc.label(path), "gateway") {
					assert.Check(t, !strings.Contains(r.Message, base), "the message shows the host path: %s", r.Message)
				}
				assert.Check(t, !strings.Contains(r.stdout, "finished"))
			})
		})
	}
}

// The gateway's config, policy and audit log beside the workspace, the
// audit log's directory holding it (a relative audit.path next to the
// config): the run starts, sees the workspace and nothing else of that
// directory, and reads none of the files; a pinned script that is one of
// them is not bound.
func TestAttackGatewayFilesBesideWorkspace(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	eachIdentity(t, func(t *testing.T, id identity) {
		base := outsideTmp(t)
		ws := filepath.Join(base, "ws")
		assert.NilError(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
		write(t, filepath.Join(base, "g.yaml"), "SECRET-config\n")
		write(t, filepath.Join(base, "policy.yaml"), "SECRET-policy\n")
		write(t, filepath.Join(base, "audit.jsonl"), "SECRET-audit\n")
		write(t, filepath.Join(ws, "src", "main.go"), "package main\n")
		judged := []byte("echo SECRET-pinned\n")
		write(t, filepath.Join(base, "hook.sh"), string(judged))
		sum := sha256.Sum256(judged)
		s := shellSpec(filepath.Join(ws, "src"), strings.Join([]string{
			`pwd`,
			`ls -A ` + base,
			`cat ` + base + `/g.yaml ` + base + `/policy.yaml ` + base + `/audit.jsonl 2>/dev/null`,
			`bash ` + base + `/hook.sh 2>/dev/null`,
			`cat main.go`,
			`echo made > ../made`,
		}, "\n"))
		s.WorkspaceRoots = []string{ws}
		s.DenyPaths = []string{base + "/g.yaml", base + "/policy.yaml", base + "/hook.sh", base}
		s.Pins = []govern.Pin{{Path: base + "/hook.sh", RealPath: base + "/hook.sh", SHA256: hex.EncodeToString(sum[:]), Bytes: judged}}
		assert.NilError(t, os.Chmod(ws, 0o777))
		r := id.run(t, s)
		assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
		assert.Check(t, is.Equal(r.stdout, ws+"/src\nws\npackage main\n"), "stderr: %s", r.stderr)
		assert.Check(t, is.Contains(r.Message, "pinned script "+base+"/hook.sh is masked in the sandbox: not bound"))
		assert.Check(t, is.Equal(readHost(t, filepath.Join(ws, "made")), "made\n"))
		assert.Check(t, is.Equal(readHost(t, filepath.Join(base, "g.yaml")), "SECRET-config\n"))
	})
}

// Many runs start while the host replaces one of the gateway's files by
// rename in a tight loop: none fails to start, and no message shows the
// file's path. Where the directory can be covered, every run completes and
// none reads the file. Where it cannot (more entries than the bound), a
// run the loop raced is killed (the rename unmasks the file in it), never
// failed_to_start; such a run may have read the new file in the time
// inotify takes to report the rename (docs/sandbox.md, "What remains
// outside isolation"), which this counts.
func TestAttackMaskRenameRacingSetup(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, big := range []bool{false, true} {
		t.Run(map[bool]string{false: "covered", true: "too large to cover"}[big], func(t *testing.T) {
			t.Parallel()
			base := outsideTmp(t)
			ws := filepath.Join(base, "ws")
			assert.NilError(t, os.Mkdir(ws, 0o755))
			policy := filepath.Join(base, "etc", "policy.yaml")
			write(t, policy, "SECRET-0\n")
			if big {
				fill(t, filepath.Dir(policy), maxCoverEntries)
			}
			stop := make(chan struct{})
			var renames int
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1; ; i++ {
					select {
					case <-stop:
						renames = i
						return
					default:
					}
					tmp := policy + ".tmp"
					if os.WriteFile(tmp, []byte(fmt.Sprintf("SECRET-%d\n", i)), 0o644) == nil {
						os.Rename(tmp, policy)
					}
				}
			}()
			const runs = 24
			results := make(chan runOut, runs)
			var started sync.WaitGroup
			for range runs {
				started.Add(1)
				go func() {
					defer started.Done()
					s := shellSpec(ws, `cat `+policy+` 2>/dev/null; echo ran`)
					s.DenyPaths = []string{policy}
					results <- runIn(t, context.Background(), s)
				}()
			}
			started.Wait()
			close(stop)
			wg.Wait()
			close(results)
			counts := map[govern.Status]int{}
			read := 0
			for r := range results {
				counts[r.Status]++
				if strings.Contains(r.stdout+r.stderr, "SECRET") {
					read++
					assert.Check(t, big && r.Status == govern.StatusKilled, "%+v", r)
				}
				assert.Check(t, !strings.Contains(r.Message, "SECRET"), r.Message)
				assert.Check(t, !strings.Contains(r.Message, policy), r.Message)
				switch r.Status {
				case govern.StatusCompleted:
					assert.Check(t, is.Equal(r.stdout, "ran\n"))
				case govern.StatusKilled:
					assert.Check(t, big, "a covered run was killed: %s", r.Message)
					assert.Check(t, is.DeepEqual(r.MaskReplaced, []string{"one of the gateway's own files"}))
				default:
					t.Errorf("%s (%s): %s", r.Status, r.Reason, r.Message)
				}
			}
			t.Logf("%d renames during the runs: %v; %d runs printed it", renames, counts, read)
			assert.Check(t, renames > runs, "the loop barely ran")
		})
	}
}
