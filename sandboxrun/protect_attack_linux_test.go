package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/secretscan"
)

// The repository metadata a host git executes from, attacked from inside
// the sandbox, and a host git run afterwards as the workspace's owner to
// see what it runs. Every attack's marker is a file the planted
// fsmonitor or hook would touch on the host.

// hostGit runs git in dir on the host as the identity's user (the owner of
// the workspace, so that git's safe.directory accepts it).
func (id identity) hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	home := filepath.Join(filepath.Dir(dir), "githome-"+randHex(t))
	assert.NilError(t, os.MkdirAll(home, 0o755))
	id.own(t, home)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "LC_ALL=C"}
	if os.Geteuid() == 0 && id.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid)}}
	}
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, "git %v: %s", args, out)
	return string(out)
}

// repo makes a repository with one commit in a fresh workspace (or in
// sub below it) owned by the identity, and returns the workspace, the
// repository's directory and a marker path the attacks try to create.
func (id identity) repo(t *testing.T, sub string) (ws, dir, marker string) {
	t.Helper()
	ws = id.workspace(t)
	dir = filepath.Join(ws, sub)
	assert.NilError(t, os.MkdirAll(dir, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644))
	id.own(t, ws)
	id.hostGit(t, dir, "init", "-q", "-b", "main")
	id.hostGit(t, dir, "add", "README")
	id.hostGit(t, dir, "commit", "-q", "-m", "one")
	// Outside the workspace (read-only in the sandbox), writable by the
	// host git that would run the planted code.
	marks := filepath.Join(filepath.Dir(ws), "marks")
	assert.NilError(t, os.Mkdir(marks, 0o755))
	id.own(t, marks)
	marker = filepath.Join(marks, "PWNED-"+randHex(t))
	return ws, dir, marker
}

func fileSum(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	assert.NilError(t, err)
	return string(b)
}

func noMarker(t *testing.T, marker, what string) {
	t.Helper()
	_, err := os.Stat(marker)
	assert.Check(t, os.IsNotExist(err), "%s: the host git ran the planted code (%s exists)", what, marker)
}

// `mv .git .git-old && mkdir .git && cp -a .git-old/. .git/` with a new
// config: the directory itself cannot be renamed away.
func TestAttackGitRenamed(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws, dir, marker := id.repo(t, "")
		before := fileSum(t, filepath.Join(dir, ".git/config"))
		script := fmt.Sprintf(`mv .git .git-old; echo "mv=$?"
mkdir .git 2>/dev/null; cp -a .git-old/. .git/ 2>/dev/null
printf '[core]\n\tfsmonitor = "touch %[1]s; false"\n' > .git/config; echo "config=$?"
mv .git/config .git/config.old; echo "mvconfig=$?"
rm -rf .git/hooks; echo "rmhooks=$?"
true`, marker)
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, strings.Contains(o.stdout, "mv=1"), "the rename of .git succeeded: %s", o.stdout)
		assert.Check(t, strings.Contains(o.stdout, "config=1") && strings.Contains(o.stdout, "mvconfig=1"), o.stdout)
		id.hostGit(t, dir, "status", "--short")
		noMarker(t, marker, "renamed .git")
		assert.Check(t, is.Equal(fileSum(t, filepath.Join(dir, ".git/config")), before))
		_, err := os.Stat(filepath.Join(dir, ".git-old"))
		assert.Check(t, os.IsNotExist(err))
		assert.Check(t, is.Len(o.ProtectedModified, 0))
	})
}

// A commondir pointing at a planted repository: the name does not exist
// in a main repository, so it cannot be bound; it is watched, and its
// creation kills the run and moves it aside before a host git reads it.
func TestAttackGitCommondir(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws, dir, marker := id.repo(t, "")
		script := fmt.Sprintf(`mkdir -p planted/objects planted/refs/heads
echo 'ref: refs/heads/main' > planted/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %[1]s; false"\n' > planted/config
echo ../planted > .git/commondir.tmp && mv .git/commondir.tmp .git/commondir
sleep 5; echo STILL-RUNNING`, marker)
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusKilled), "%s %s", o.Status, o.Message)
		assert.Check(t, !strings.Contains(o.stdout, "STILL-RUNNING"), o.stdout)
		assert.Check(t, strings.Contains(o.Message, filepath.Join(dir, ".git/commondir")), o.Message)
		assert.Check(t, slices.Contains(o.ProtectedCreated, filepath.Join(dir, ".git/commondir")), "%v", o.ProtectedCreated)
		_, err := os.Lstat(filepath.Join(dir, ".git/commondir"))
		assert.Check(t, os.IsNotExist(err), "commondir is still there")
		moved, _ := filepath.Glob(filepath.Join(dir, ".git/commondir.mitrity-quarantine-*"))
		assert.Check(t, is.Len(moved, 1))
		id.hostGit(t, dir, "status", "--short")
		noMarker(t, marker, "planted commondir")
	})
}

// A repository without hooks/ (or info/): the empty directory git init
// would make is made, and held.
func TestAttackGitHooksMissing(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws, dir, marker := id.repo(t, "")
		assert.NilError(t, os.RemoveAll(filepath.Join(dir, ".git/hooks")))
		assert.NilError(t, os.RemoveAll(filepath.Join(dir, ".git/info")))
		script := fmt.Sprintf(`mkdir -p .git/hooks; printf '#!/bin/sh\ntouch %[1]s\n' > .git/hooks/post-commit; chmod +x .git/hooks/post-commit; echo "hook=$?"
printf '*.x filter=evil\n' > .git/info/attributes; echo "attrs=$?"`, marker)
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		_, err := os.Stat(filepath.Join(dir, ".git/hooks/post-commit"))
		assert.Check(t, os.IsNotExist(err), "a hook was planted")
		id.hostGit(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
		noMarker(t, marker, "hook in a missing hooks/")
	})
}

// core.hooksPath naming a directory of the worktree (husky): that
// directory is the repository's hooks, held like .git/hooks; a missing
// one is watched.
func TestAttackGitHooksPath(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws, dir, marker := id.repo(t, "")
		husky := filepath.Join(dir, ".husky")
		assert.NilError(t, os.Mkdir(husky, 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(husky, "pre-commit"), []byte("#!/bin/sh\ntrue\n"), 0o755))
		id.own(t, husky)
		id.hostGit(t, dir, "config", "core.hooksPath", ".husky")
		script := fmt.Sprintf(`printf '#!/bin/sh\ntouch %[1]s\n' > .husky/pre-commit; echo "write=$?"
printf '#!/bin/sh\ntouch %[1]s\n' > .husky/post-commit; chmod +x .husky/post-commit; echo "new=$?"`, marker)
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, strings.Contains(o.stdout, "write=1") && strings.Contains(o.stdout, "new=1"), o.stdout)
		id.hostGit(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
		noMarker(t, marker, "a hook in core.hooksPath")
	})
}

// A repository below the root, on the way to the working directory: its
// parent cannot be renamed away and replaced either.
func TestAttackGitParentRenamed(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws, dir, marker := id.repo(t, "proj")
		script := fmt.Sprintf(`cd .. && mv proj proj2; echo "mv=$?"
mkdir -p proj/.git && cp -a proj2/.git/. proj/.git/ 2>/dev/null
printf '[core]\n\tfsmonitor = "touch %[1]s; false"\n' > proj/.git/config; echo "config=$?"`, marker)
		s := id.spec(ws, script)
		s.Cwd = dir
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, strings.Contains(o.stdout, "mv=1"), "the repository's parent was renamed: %s", o.stdout)
		id.hostGit(t, dir, "status", "--short")
		noMarker(t, marker, "renamed parent")
	})
}

// A protected name that does not exist (.vscode, .claude, .mcp.json):
// creating one kills the run, and what it made is moved aside.
func TestAttackProtectedCreated(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		script := `mkdir -p x/.vscode && echo '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}' > x/.vscode/tasks.json
mv x/.vscode .vscode; sleep 5; echo STILL-RUNNING`
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusKilled), "%s %s", o.Status, o.Message)
		assert.Check(t, !strings.Contains(o.stdout, "STILL-RUNNING"), o.stdout)
		_, err := os.Lstat(filepath.Join(ws, ".vscode"))
		assert.Check(t, os.IsNotExist(err), ".vscode is still there")
		moved, _ := filepath.Glob(filepath.Join(ws, ".vscode.mitrity-quarantine-*"))
		assert.Check(t, is.Len(moved, 1))
		assert.Check(t, slices.Contains(o.ProtectedCreated, filepath.Join(ws, ".vscode")), "%v", o.ProtectedCreated)
		// A new repository where there was none is git init's to make:
		// reported, not stopped.
		o = id.run(t, id.spec(ws, "git init -q . && echo INIT-OK"))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, strings.Contains(o.stdout, "INIT-OK"), o.stdout)
		assert.Check(t, slices.Contains(o.ProtectedCreated, filepath.Join(ws, ".git/config")), "%v", o.ProtectedCreated)
	})
}

// A workspace root that is a home holds the configuration git, ssh and
// the user's session read for every command they run: git's global
// config (core.fsmonitor, core.pager, aliases, core.hooksPath name
// programs git runs in every repository; measured: a ~/.gitconfig the
// sandbox wrote made the user's next git status on the host run its
// fsmonitor), ssh's config (ProxyCommand), systemd's and the desktop's
// user units and autostart entries, fish's config. The existing ones
// stay as they were, and making a missing one kills the run. The root is
// a home by DenyHomes, as the gateway names its own HOME; a project root
// that is no home may make its own .config.
func TestAttackHomeConfig(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		home := id.workspace(t)
		spec := func(script string) *sandbox.Spec {
			s := id.spec(home, script)
			s.DenyHomes = []string{home}
			return s
		}
		files := map[string]string{
			".gitconfig":                     "[user]\n\tname = u\n",
			".config/git/config":             "[user]\n\tname = u\n",
			".config/systemd/user/a.service": "[Service]\nExecStart=/bin/true\n",
		}
		for n, v := range files {
			p := filepath.Join(home, n)
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.WriteFile(p, []byte(v), 0o644))
		}
		id.own(t, home)
		script := `
printf '[core]\n\tfsmonitor = /tmp/evil\n' >> .gitconfig
printf '[alias]\n\tst = !evil\n' > .config/git/config
mv .gitconfig gitconfig.old; echo '[core] pager = evil' > .gitconfig
echo 'ExecStart=evil' > .config/systemd/user/a.service
mkdir -p .config/autostart
echo ok` + " 2>/dev/null"
		o := id.run(t, spec(script))
		for n, v := range files {
			b, err := os.ReadFile(filepath.Join(home, n))
			assert.Check(t, err == nil && string(b) == v, "%s changed on the host: %q", n, b)
		}
		assert.Check(t, is.Equal(o.Status, govern.StatusKilled), "%s %s", o.Status, o.Message)
		_, err := os.Lstat(filepath.Join(home, ".config/autostart"))
		assert.Check(t, os.IsNotExist(err), ".config/autostart is still there")
		// ~/.ssh is masked when it exists; a missing one cannot be made.
		// Nor can a gateway's user config (as ownfiles.Locates holds this
		// gateway's own).
		for _, made := range []string{".ssh/config", ".config/mitrity/mitrity-gateway.yaml"} {
			dir := filepath.Join(home, strings.Split(made, "/")[0])
			if strings.HasPrefix(made, ".config/") {
				dir = filepath.Join(home, ".config/mitrity")
			}
			o = id.run(t, spec(`mkdir -p `+filepath.Dir(made)+` && echo 'x' > `+made+`; sleep 5; echo STILL-RUNNING`))
			assert.Check(t, is.Equal(o.Status, govern.StatusKilled), "%s: %s %s", made, o.Status, o.Message)
			assert.Check(t, !strings.Contains(o.stdout, "STILL-RUNNING"), o.stdout)
			_, err = os.Lstat(dir)
			assert.Check(t, os.IsNotExist(err), "%s is still there", dir)
			assert.Check(t, slices.Contains(o.ProtectedCreated, dir), "%v", o.ProtectedCreated)
		}
		project := id.workspace(t)
		o = id.run(t, id.spec(project, `mkdir -p .config/git .config/nextest && echo x > .gitconfig && echo MADE`))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), "%s %s", o.Status, o.Message)
		assert.Check(t, strings.Contains(o.stdout, "MADE"), o.stdout)
	})
}

// A concurrent run renames a new file over a script another run pinned
// (Linux detaches a bind mount whose mount point is renamed over from
// another mount namespace): both orders. The pinned run runs the judged
// bytes, and the rename is refused while it runs.
func TestAttackPinDetached(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		for _, pinnedFirst := range []bool{false, true} {
			ws := id.workspace(t)
			marker := filepath.Join(filepath.Dir(ws), "marks", "PWNED")
			assert.NilError(t, os.MkdirAll(filepath.Dir(marker), 0o755))
			id.own(t, filepath.Dir(marker))
			judged := []byte("echo JUDGED\n")
			assert.NilError(t, os.WriteFile(filepath.Join(ws, "x.sh"), judged, 0o644))
			assert.NilError(t, os.WriteFile(filepath.Join(ws, "evil"), []byte("echo EVIL; touch "+marker+"\n"), 0o644))
			id.own(t, ws)
			swap := id.spec(ws, `sleep 1.5; mv -f evil x.sh; echo "mv=$?"; mv -f x.sh y.sh; echo "mv2=$?"; rm -f x.sh; echo "rm=$?"`)
			pinned := id.spec(ws, `sleep 3; bash x.sh`)
			sum := sha256.Sum256(judged)
			x := filepath.Join(ws, "x.sh")
			pinned.Pins = []govern.Pin{{Path: x, RealPath: x, SHA256: hex.EncodeToString(sum[:]), Bytes: judged}}
			first, second := swap, pinned
			if pinnedFirst {
				first, second = pinned, swap
			}
			outs := make(chan outcome, 1)
			go func() { outs <- id.run(t, first) }()
			time.Sleep(500 * time.Millisecond) // the first is running
			o2 := id.run(t, second)
			o1 := <-outs
			swapped, ran := o1, o2
			if pinnedFirst {
				swapped, ran = o2, o1
			}
			assert.Check(t, is.Equal(ran.Status, govern.StatusCompleted), "%s (pinned first: %v)", ran.Message, pinnedFirst)
			assert.Check(t, is.Equal(ran.stdout, "JUDGED\n"), "the pinned run ran other bytes (pinned first: %v)", pinnedFirst)
			assert.Check(t, strings.Contains(swapped.stdout, "mv=1") && strings.Contains(swapped.stdout, "mv2=1") && strings.Contains(swapped.stdout, "rm=1"),
				"the pinned path could be replaced while pinned (pinned first: %v): %s", pinnedFirst, swapped.stdout)
			assert.Check(t, is.Equal(fileSum(t, x), string(judged)))
			noMarker(t, marker, "swapped pin")
		}
	})
}

// The working directory is checked on a path, and bubblewrap changes into
// it later: a symlink swapped in between (here, all the time) must never
// start a command outside the roots. Each run either runs in the workspace
// or is refused cwd_outside_workspace.
func TestAttackCwdSwap(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		inside := filepath.Join(ws, "d")
		assert.NilError(t, os.Mkdir(inside, 0o755))
		id.own(t, ws)
		link := filepath.Join(ws, "link")
		assert.NilError(t, os.Symlink(inside, link))
		stop := make(chan struct{})
		swapped := make(chan int)
		go func() {
			n := 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					swapped <- n
					return
				default:
				}
				target := inside
				if i%2 == 1 {
					target = "/etc"
				}
				tmp := link + ".tmp"
				os.Remove(tmp)
				if os.Symlink(target, tmp) == nil && os.Rename(tmp, link) == nil {
					n++
				}
			}
		}()
		outside, inWS, refused := 0, 0, 0
		for i := 0; i < 60; i++ {
			s := id.spec(ws, `pwd -P`)
			s.Cwd = link
			o := id.run(t, s)
			switch {
			case o.Status == govern.StatusNeverRan && o.Reason == govern.ReasonCwdOutsideWorkspace:
				refused++
			case o.Status == govern.StatusCompleted && strings.TrimSpace(o.stdout) == inside:
				inWS++
			case o.Status == govern.StatusCompleted:
				outside++
				t.Errorf("the command ran in %q", strings.TrimSpace(o.stdout))
			default:
				t.Errorf("%s %s: %s", o.Status, o.Reason, o.Message)
			}
		}
		close(stop)
		n := <-swapped
		t.Logf("%d swaps: %d runs in the workspace, %d refused, %d outside", n, inWS, refused, outside)
		assert.Check(t, inWS > 0 && refused > 0, "the swap did not race both ways: the test proves nothing")
	})
}

// cmdlineWatch reads every host process's command line every 10 ms until
// stop, and reports whether value was ever on one.
func cmdlineWatch(value string) (stop func() []string) {
	done := make(chan struct{})
	seen := make(chan []string, 1)
	go func() {
		var hits []string
		for {
			select {
			case <-done:
				seen <- hits
				return
			default:
			}
			hits = append(hits, hostProcsWith(value)...)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() []string { close(done); return <-seen }
}

// The exec guard with code the analyzer never sees: a Python subprocess,
// a compiled program, a script written at run time, each putting the
// injected value on a child's command line while the host's /proc is
// watched. The value never appears there; each start is refused.
func TestAttackArgvGuard(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		token := "ghp_argvGuard" + randHex(t) + "0123456789abcdef"
		src := filepath.Join(ws, "leak.c")
		assert.NilError(t, os.WriteFile(src, []byte(`#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
int main(void) {
	char *t = getenv("TOKEN");
	char *argv[] = {"/bin/sh", "-c", "sleep 3", t, NULL};
	execv("/bin/sh", argv);
	perror("execv");
	return 3;
}
`), 0o644))
		bin := filepath.Join(ws, "leak")
		if out, err := exec.Command("cc", "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("cc: %v: %s", err, out)
		}
		id.own(t, ws)
		script := `python3 -c 'import os, subprocess
try:
    subprocess.run(["/bin/sh", "-c", "sleep 3", os.environ["TOKEN"]]); print("py-ran")
except PermissionError: print("py-refused")'
./leak; echo "c=$?"
printf '/bin/sh -c "sleep 3" "%s-x"\n' "$TOKEN" > gen.sh; bash gen.sh; echo "gen=$?"
perl -e 'exec "/bin/sh", "-c", "sleep 3", "$ENV{TOKEN}" or print "perl-refused $!\n"'
/bin/sh -c 'sleep 0.2' "$(printf %s "$TOKEN" | od -An -tx1 | tr -d ' \n')"; echo "hex=$?"`
		s := id.spec(ws, script)
		s.Env = append(s.Env, "TOKEN="+token)
		s.Credentials = []secretscan.Secret{{ID: "tok", Value: token}}
		stop := cmdlineWatch(token)
		o := id.run(t, s)
		seen := stop()
		assert.Check(t, is.Len(seen, 0), "the value was on a host command line: %v", seen)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		for _, want := range []string{"py-refused", "execv: Operation not permitted", "c=3", "gen=126", "perl-refused Operation not permitted", "hex=126"} {
			assert.Check(t, is.Contains(o.stdout+o.stderr, want))
		}
		assert.Check(t, len(o.ArgvRefused) >= 5, "%+v", o.ArgvRefused)
		// The control: without the guard the same program does put it
		// there (the watch can see it).
		ctl := exec.Command(bin)
		ctl.Env = []string{"TOKEN=" + token}
		stop = cmdlineWatch(token)
		assert.NilError(t, ctl.Start())
		time.Sleep(300 * time.Millisecond)
		seen = stop()
		ctl.Process.Kill()
		ctl.Wait()
		assert.Check(t, len(seen) > 0, "control: the watch did not see the value on a host process")
	})
}
