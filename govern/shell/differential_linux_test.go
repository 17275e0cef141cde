package shell

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern"
)

// TestCdDifferential replays cd and path-resolution constructs against the
// real shells (bash 5.2 as bash, dash as sh) and checks that the script each
// one actually ran is the one the analyzer pinned, or that the analyzer
// said it could not know (script_not_inspected, opaque): never another file,
// never silently nothing. The constructs are generated combinatorially: cd
// forms x options x CDPATH forms x the way the script is named, over a tree
// with symlinked and plain directories in which every candidate x.sh prints
// its own name. Like mvdan/sh's TestRunnerRunConfirm, it skips when the
// shells are missing, unless GOVERN_REQUIRE_SANDBOX is set.
func TestCdDifferential(t *testing.T) {
	root := diffTree(t)
	ws := filepath.Join(root, "ws")
	var cases []diffCase
	for _, d := range []Dialect{DialectBash, DialectSh} {
		if shellPath(t, d) == "" {
			continue
		}
		cases = append(cases, cdConstructs(d, root)...)
		cases = append(cases, stdinConstructs(d)...)
	}
	if len(cases) == 0 {
		t.Skip("neither /bin/bash nor dash is installed")
	}
	// Run every construct through the real shell first, two at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cases[i].ran, cases[i].out = runShell(shellPath(t, cases[i].dialect), ws, root, cases[i])
		}()
	}
	wg.Wait()

	counts := map[string]int{}
	for _, c := range cases {
		got := judge(t, c, root, ws)
		counts[string(c.dialect)+" "+got]++
	}
	t.Logf("%d constructs (%d bash, %d sh): %v", len(cases), counts["bash exact"]+counts["bash unknown"]+counts["bash nothing ran"], counts["sh exact"]+counts["sh unknown"]+counts["sh nothing ran"], counts)
	if counts["bash exact"] == 0 {
		t.Error("no bash construct was judged exactly: the differential does not test anything")
	}
}

type diffCase struct {
	dialect Dialect
	text    string
	env     map[string]string
	stdin   string
	// filled by the run
	ran string // the x.sh that ran, relative to the tree's root; "stdin" for the stdin code
	out string
}

// judge compares one construct's real run with its analysis and returns
// "exact", "unknown" or "nothing ran".
func judge(t *testing.T, c diffCase, root, ws string) string {
	t.Helper()
	a := Analyze(Input{
		Text: c.text, Dialect: c.dialect, Cwd: ws,
		Path:            []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"},
		Home:            filepath.Join(root, "home"),
		InspectionRoots: []string{root}, WritableRoots: []string{root},
		Env: c.env, Stdin: []byte(c.stdin),
	})
	unknown := false
	for _, f := range a.Flags {
		if f.Kind == FlagScriptNotInspected || f.Kind == FlagOpaque {
			unknown = true
		}
	}
	var pinned []string
	for _, p := range a.Pins {
		rel, err := filepath.Rel(root, p.RealPath)
		assert.NilError(t, err)
		pinned = append(pinned, filepath.Dir(rel))
	}
	report := func(why string) {
		var b strings.Builder
		assert.NilError(t, a.WriteReport(&b))
		t.Errorf("%s: %s\n$ %s\nenv %v\nthe shell printed: %q\n%s", c.dialect, why, c.text, c.env, c.out, b.String())
	}
	switch {
	case c.ran == "":
		return "nothing ran"
	case c.ran == "stdin":
		for _, cmd := range a.Commands {
			if argvString(cmd.Argv) == "echo RAN:stdin" {
				return "exact"
			}
		}
		if !unknown {
			report("the shell ran the code on stdin, which the analysis does not list")
		}
		return "unknown"
	}
	for _, p := range pinned {
		if p == c.ran {
			return "exact"
		}
	}
	switch {
	case len(pinned) > 0:
		report(fmt.Sprintf("the shell ran %s/x.sh, the analyzer pinned %v", c.ran, pinned))
	case !unknown:
		report(fmt.Sprintf("the shell ran %s/x.sh, the analyzer pinned nothing and did not say it could not know", c.ran))
	}
	return "unknown"
}

// diffTree builds the tree: x.sh in plain and symlinked directories, each
// printing its directory relative to the root.
func diffTree(t *testing.T) string {
	root, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	for _, d := range []string{".", "ws", "ws/sub", "ws/c", "ws/c/sub", "ws/a", "ws/a/sub", "ws/a/b", "ws/a/b/sub", "home", "old", "other/sub"} {
		assert.NilError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(root, d, "x.sh"), []byte("echo RAN:"+d+"\n"), 0o755))
	}
	// There is no ws/b: cd l/../b finds no logical ws/b, and bash falls
	// back to the physical ws/a/b.
	for link, target := range map[string]string{
		"ws/l": "a/b", "ws/la": filepath.Join(root, "ws/a/b"), "ws/up": "..", "ws/self": ".", "ws/c/lc": "../a",
	} {
		assert.NilError(t, os.Symlink(target, filepath.Join(root, link)))
	}
	return root
}

func shellPath(t *testing.T, d Dialect) string {
	t.Helper()
	p := "/bin/bash"
	if d == DialectSh {
		p = "/bin/sh"
	}
	_, err := os.Stat(p)
	if err == nil && d == DialectSh {
		if real, _ := filepath.EvalSymlinks(p); filepath.Base(real) != "dash" {
			err = fmt.Errorf("/bin/sh is %s, not dash", real)
		}
	}
	if err != nil {
		if os.Getenv("GOVERN_REQUIRE_SANDBOX") != "" {
			t.Fatalf("the %s differential needs %s: %v", d, p, err)
		}
		return ""
	}
	return p
}

// runShell runs one construct the way the executor does: no profile, an
// environment built from nothing, the workspace as the directory.
func runShell(sh, ws, root string, c diffCase) (ran, out string) {
	args := []string{sh, "-c", c.text}
	if c.dialect == DialectBash {
		args = []string{sh, "--noprofile", "--norc", "-c", c.text}
	}
	cmd := &exec.Cmd{Path: sh, Args: args, Dir: ws}
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + filepath.Join(root, "home"), "LANG=C.UTF-8", "TERM=dumb", "PWD=" + ws}
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(c.stdin)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	_ = cmd.Run()
	for _, line := range strings.Split(b.String(), "\n") {
		if r, ok := strings.CutPrefix(line, "RAN:"); ok {
			ran = r
		}
	}
	return ran, b.String()
}

// cdConstructs generates the cd constructs of one dialect: options x CDPATH
// forms x cd forms x the way the script is named.
func cdConstructs(d Dialect, root string) []diffCase {
	operands := []string{"sub", "./sub", "l", "l/..", "l/../sub", "l/../b", "la/..", "la/../sub", "self/l/..",
		"up/ws/l/..", "c/lc/..", "c/lc/../sub", "$ROOT/ws/l/..", "$ROOT/ws/la/../b", "''", "nope", "l/sub/..", "..", "../ws/sub", "a//b/", "-"}
	flags := []string{"", "-P ", "-L "}
	// Forms that are not one cd: the command word comes first, so a CDPATH
	// prefix lands on it.
	compound := []string{"cd", "cd l; cd ..", "cd l; cd ../sub", "cd -P l; cd ..", "cd l; cd -", "cd sub; cd -; cd -"}
	if d == DialectBash {
		compound = append(compound, "pushd sub; popd", "pushd l; pushd", "pushd l; cd ..; popd", "pushd sub", "cd l; cd -P ../sub")
	}
	modes := []string{""}
	if d == DialectBash {
		modes = append(modes, "set -P; ", "set -o posix; ", "set -p; ")
	}
	type cdpath struct {
		prefix, assign string
		env            map[string]string
	}
	cdpaths := []cdpath{
		{}, {prefix: "CDPATH=c "}, {assign: "CDPATH=$ROOT/other; "}, {assign: "CDPATH=:c; "},
		{assign: "CDPATH=/nonexistent:c:; "}, {assign: "CDPATH=c/lc/..; "}, {env: map[string]string{"CDPATH": "c"}},
	}
	runs := []string{"bash x.sh", "bash ../x.sh"}
	if d == DialectSh {
		runs = []string{"sh x.sh", ". ../x.sh"}
	}
	var cds []string
	for _, op := range operands {
		for _, f := range flags {
			cds = append(cds, "cd "+f+op)
		}
	}
	cds = append(cds, compound...)
	var out []diffCase
	for _, mode := range modes {
		for _, cp := range cdpaths {
			for _, cd := range cds {
				envs := []map[string]string{cp.env}
				if strings.HasSuffix(cd, " -") {
					// cd - with an OLDPWD the call passes, and without one.
					envs = append(envs, merge(cp.env, map[string]string{"OLDPWD": "$ROOT/old"}))
				}
				for _, env := range envs {
					for _, run := range runs {
						text := mode + cp.assign + cp.prefix + strings.ReplaceAll(cd, ";", " >/dev/null 2>&1;") + " >/dev/null 2>&1; " + run
						out = append(out, diffCase{dialect: d, text: strings.ReplaceAll(text, "$ROOT", root), env: expandEnv(env, root)})
					}
				}
			}
		}
	}
	// Script names that go through a symlink without any cd.
	for _, name := range []string{"l/../x.sh", "./l/../x.sh", "la/../x.sh", "c/lc/../sub/x.sh", "self/l/../x.sh", "$ROOT/ws/l/../x.sh", "/proc/self/cwd/x.sh", "up/ws/x.sh"} {
		for _, run := range []string{"bash ", ". ", "sh "} {
			out = append(out, diffCase{dialect: d, text: strings.ReplaceAll(run+name, "$ROOT", root)})
		}
	}
	return out
}

// stdinConstructs read a script from the call's stdin through its aliases.
func stdinConstructs(d Dialect) []diffCase {
	var out []diffCase
	for _, name := range []string{"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0", "//dev//stdin", "-", "-s", "/dev/fd/3 3<&0"} {
		for _, how := range []string{"bash ", "sh ", ". ", "bash -c 'bash %s'", "cd /dev && bash "} {
			text := how + name
			if strings.Contains(how, "%s") {
				text = fmt.Sprintf(how, name)
			}
			if how == ". " && (name == "-" || name == "-s") {
				continue
			}
			if how == "cd /dev && bash " {
				if !strings.HasPrefix(name, "/dev/") || strings.Contains(name, " ") {
					continue
				}
				text = how + strings.TrimPrefix(name, "/dev/")
			}
			out = append(out, diffCase{dialect: d, text: text, stdin: "echo RAN:stdin\n"})
		}
	}
	return out
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func expandEnv(env map[string]string, root string) map[string]string {
	if env == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range env {
		out[k] = strings.ReplaceAll(v, "$ROOT", root)
	}
	return out
}

// TestShebangDifferential runs scripts whose #! interpreter is itself a
// script (directly, relative, through env) with the real shells and checks
// that every script body that printed its marker is one the analysis walked
// and pinned, or that the analysis said it could not know.
func TestShebangDifferential(t *testing.T) {
	long := "/" + strings.Repeat("x", 300)
	type tcase struct {
		name  string
		files map[string]string // under ws; $WS is the workspace
		text  string
		path  bool // ws/bin leads PATH
	}
	marker := func(name string) string { return "echo RAN:" + name + "\n" }
	chain := func(n int) map[string]string {
		m := map[string]string{}
		for i := 1; i < n; i++ {
			m[fmt.Sprintf("s%d", i)] = fmt.Sprintf("#!$WS/s%d\n", i+1) + marker(fmt.Sprintf("s%d", i))
		}
		m[fmt.Sprintf("s%d", n)] = "#!/bin/sh\n" + marker(fmt.Sprintf("s%d", n))
		return m
	}
	cases := []tcase{
		{name: "direct", text: "./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh\n" + marker("a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh")}},
		{name: "argument", text: "./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh -x\n" + marker("a.sh"), "b.sh": "#!/bin/bash\n" + marker("b.sh")}},
		{name: "five", text: "./s1", files: chain(5)},
		{name: "six", text: "./s1", files: chain(6)},
		{name: "noexec", text: "./a.sh", files: map[string]string{"a.sh": "#!$WS/b.txt\n" + marker("a.sh"), "b.txt": marker("b.txt")}},
		{name: "noexec nested", text: "./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh\n" + marker("a.sh"), "b.sh": "#!$WS/c.txt\n" + marker("b.sh"), "c.txt": marker("c.txt")}},
		{name: "cut off", text: "./a.sh", files: map[string]string{"a.sh": "#!" + long + "\n" + marker("a.sh")}},
		{name: "relative", text: "./sub/a.sh", files: map[string]string{"sub/a.sh": "#!b.sh\n" + marker("sub/a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh"), "sub/b.sh": "#!/bin/sh\n" + marker("sub/b.sh")}},
		{name: "relative cd", text: "cd sub && ./a.sh", files: map[string]string{"sub/a.sh": "#!b.sh\n" + marker("sub/a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh"), "sub/b.sh": "#!/bin/sh\n" + marker("sub/b.sh")}},
		{name: "env path", text: "./a.sh", path: true, files: map[string]string{"a.sh": "#!/usr/bin/env b.sh\n" + marker("a.sh"), "bin/b.sh": "#!/bin/sh\n" + marker("bin/b.sh")}},
		{name: "env relative", text: "./a.sh", files: map[string]string{"a.sh": "#!/usr/bin/env ./b.sh\n" + marker("a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh")}},
		{name: "env no shebang", text: "./a.sh", path: true, files: map[string]string{"a.sh": "#!/usr/bin/env b\n" + marker("a.sh"), "bin/b": marker("bin/b")}},
		{name: "env chain", text: "./a.sh", path: true, files: map[string]string{"a.sh": "#!/usr/bin/env b\n" + marker("a.sh"), "bin/b": "#!$WS/c.sh\n" + marker("bin/b"), "c.sh": "#!/bin/sh\n" + marker("c.sh")}},
		{name: "path name", text: "tool", path: true, files: map[string]string{"bin/tool": "#!$WS/bin/impl\n" + marker("bin/tool"), "bin/impl": "#!/bin/sh\n" + marker("bin/impl")}},
		{name: "shell operand", text: "bash ./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh\n" + marker("a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh")}},
		{name: "sh operand", text: "sh ./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh\n" + marker("a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh")}},
		{name: "dot", text: ". ./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh\n" + marker("a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh")}},
		{name: "shell argument", text: "./a.sh", files: map[string]string{"a.sh": "#!/bin/bash b.sh\n" + marker("a.sh"), "b.sh": marker("b.sh")}},
		{name: "shell option", text: "./a.sh", files: map[string]string{"a.sh": "#!/bin/sh -e\n" + marker("a.sh")}},
		{name: "interpreter argument", text: "./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh\n" + marker("a.sh"), "b.sh": "#!/bin/sh ./c.sh\n" + marker("b.sh"), "c.sh": marker("c.sh")}},
		{name: "env split argument", text: "./a.sh", files: map[string]string{"a.sh": "#!/usr/bin/env -S bash ./b.sh\n" + marker("a.sh"), "b.sh": marker("b.sh")}},
		{name: "through env", text: "env ./a.sh", files: map[string]string{"a.sh": "#!$WS/b.sh\n" + marker("a.sh"), "b.sh": "#!/bin/sh\n" + marker("b.sh")}},
	}
	exact := 0
	for _, d := range []Dialect{DialectBash, DialectSh} {
		sh := shellPath(t, d)
		if sh == "" {
			continue
		}
		for _, c := range cases {
			root, err := filepath.EvalSymlinks(t.TempDir())
			assert.NilError(t, err)
			ws := filepath.Join(root, "ws")
			for name, body := range c.files {
				p := filepath.Join(ws, name)
				assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				assert.NilError(t, os.WriteFile(p, []byte(strings.ReplaceAll(body, "$WS", ws)), 0o755))
			}
			assert.NilError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
			var env map[string]string
			if c.path {
				env = map[string]string{"PATH": filepath.Join(ws, "bin") + ":/usr/local/bin:/usr/bin:/bin"}
			}
			_, out := runShell(sh, ws, root, diffCase{dialect: d, text: c.text, env: env})
			a := Analyze(Input{
				Text: c.text, Dialect: d, Cwd: ws,
				Path:            []string{"/usr/local/bin", "/usr/bin", "/bin"},
				InspectionRoots: []string{root}, WritableRoots: []string{root}, Env: env,
			})
			unknown := false
			for _, f := range a.Flags {
				switch f.Kind {
				case FlagScriptNotInspected, FlagOpaque, FlagDepthExceeded:
					unknown = true
				}
			}
			walked, pinned := map[string]bool{}, map[string]bool{}
			for _, cmd := range a.Commands {
				walked[argvString(cmd.Argv)] = true
			}
			for _, p := range a.Pins {
				rel, err := filepath.Rel(ws, p.RealPath)
				assert.NilError(t, err)
				pinned[rel] = true
			}
			report := func(why string) {
				var b strings.Builder
				assert.NilError(t, a.WriteReport(&b))
				t.Errorf("%s %s: %s\n$ %s\nthe shell printed: %q\n%s", d, c.name, why, c.text, out, b.String())
			}
			ran := map[string]bool{}
			for _, line := range strings.Split(out, "\n") {
				if r, found := strings.CutPrefix(line, "RAN:"); found {
					ran[r] = true
					if (!walked["echo RAN:"+r] || !pinned[r]) && !unknown {
						report("the shell ran " + r + ", which the analysis did not walk and pin")
					}
				}
			}
			if unknown {
				continue
			}
			// Where the analysis claims to know, it knows exactly: no
			// body it walked stayed unrun.
			for cmd := range walked {
				if r, found := strings.CutPrefix(cmd, "echo RAN:"); found && !ran[r] {
					report("the analysis walked " + r + ", which the shell did not run")
				}
			}
			exact++
		}
	}
	if exact == 0 {
		t.Skip("no shell to compare with")
	}
	t.Logf("%d of %d runs judged exactly", exact, 2*len(cases))
}

// TestTaintDifferential runs constructs that move a credential through
// what bash keeps itself ($_, BASH_REMATCH, BASH_ARGV, PWD...), coprocesses,
// process substitutions, named pipes and descriptors, with GITHUB_TOKEN set
// to a marker, and checks them against the analysis: every construct must
// really put the marker on the command line of probe (an external program
// that logs its arguments), and the analyzer must deny each one
// credential_in_argv.
func TestTaintDifferential(t *testing.T) {
	if shellPath(t, DialectBash) == "" {
		t.Skip("/bin/bash is not installed")
	}
	const marker = "ghpMARKER0123456789abcdef"
	constructs := []string{
		`[[ $GITHUB_TOKEN =~ (.*) ]]; x=${BASH_REMATCH[1]}; probe "${x:0:9}" "${x:9}"`,
		`[[ $GITHUB_TOKEN =~ ^(ghp)(.*) ]]; probe "${BASH_REMATCH[@]:1}"`,
		`for i in 1 2; do probe "${BASH_REMATCH[1]}"; [[ $GITHUB_TOKEN =~ (.*) ]]; done`,
		`: "$GITHUB_TOKEN"; x=$_; probe "$x"`,
		`/usr/bin/true; echo "$GITHUB_TOKEN" >/dev/null; probe "$_"`,
		`export X="$GITHUB_TOKEN"; probe "${_#X=}"`,
		`trap 'probe "$_"' EXIT; : "$GITHUB_TOKEN"`,
		`shopt -s extdebug; f(){ probe "${BASH_ARGV[0]}"; }; f "$GITHUB_TOKEN"`,
		`BASH_ARGV0=$GITHUB_TOKEN; probe "$0"`,
		`alias a="$GITHUB_TOKEN"; probe "${BASH_ALIASES[a]}"`,
		`cd "$GITHUB_TOKEN"; probe "$PWD"`,
		`cd "$GITHUB_TOKEN"; cd ..; probe "$OLDPWD"`,
		`cd "$GITHUB_TOKEN"; x=$(pwd); probe "$x"`,
		`pushd "$GITHUB_TOKEN" >/dev/null; probe "${DIRSTACK[0]}"`,
		`select x in a; do probe "$REPLY"; break; done <<< "$GITHUB_TOKEN" 2>/dev/null`,
		`getopts a: o -a "$GITHUB_TOKEN"; probe "$OPTARG"`,
		`mapfile -C probe -c 1 a <<< "$GITHUB_TOKEN"`,
		`coproc cat; echo "$GITHUB_TOKEN" >&${COPROC[1]}; read x <&${COPROC[0]}; probe $x`,
		`coproc C { cat; }; exec 5>&${C[1]}; echo "$GITHUB_TOKEN" >&5; read -u ${C[0]} x; probe "$x"`,
		`coproc xargs probe; echo "$GITHUB_TOKEN" >&"${COPROC[1]}"`,
		`exec > >(xargs probe); echo $GITHUB_TOKEN`,
		`exec 3> >(xargs probe); echo $GITHUB_TOKEN >&3`,
		`echo "$GITHUB_TOKEN" > >(xargs probe)`,
		`tee >(xargs probe) <<< "$GITHUB_TOKEN" >/dev/null`,
		`mkfifo p; xargs probe < p & echo "$GITHUB_TOKEN" > p; wait`,
		`mkfifo p; exec 4<>p; echo "$GITHUB_TOKEN" >&4; read -u 4 x; probe $x`,
		`exec 3<>f; echo "$GITHUB_TOKEN" >/dev/fd/3; read x </dev/fd/3; probe $x`,
		`exec 3>f; echo "$GITHUB_TOKEN" >&3; read x < /dev/fd/3; probe $x`,
		`coproc cat; echo "$GITHUB_TOKEN" >&${COPROC[1]}; read x < /dev/fd/${COPROC[0]}; probe $x`,
		`x=$(test "$GITHUB_TOKEN" -eq 1 2>&1); probe "$x"`,
		`printf -v y %d "$GITHUB_TOKEN" 2>&1 | xargs probe`,
		`exec 2> >(xargs probe); [ "$GITHUB_TOKEN" -gt 0 ]`,
	}
	for _, text := range constructs {
		t.Run(text, func(t *testing.T) {
			root := plainTempDir(t)
			ws, bin := filepath.Join(root, "ws"), filepath.Join(root, "bin")
			log := filepath.Join(root, "argv.log")
			for _, d := range []string{ws, bin, filepath.Join(ws, marker)} {
				assert.NilError(t, os.MkdirAll(d, 0o755))
			}
			probe := "#!/bin/sh\nprintf '%s' \"$@\" >> '" + log + "'\necho >> '" + log + "'\n"
			assert.NilError(t, os.WriteFile(filepath.Join(bin, "probe"), []byte(probe), 0o755))
			path := bin + ":/usr/local/bin:/usr/bin:/bin"

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-c", text)
			cmd.Dir = ws
			cmd.Env = []string{"PATH=" + path, "HOME=" + root, "LANG=C.UTF-8", "PWD=" + ws, "GITHUB_TOKEN=" + marker}
			out, _ := cmd.CombinedOutput()
			// Process substitutions and coprocesses may still be running.
			leaked := false
			for i := 0; i < 40 && !leaked; i++ {
				b, _ := os.ReadFile(log)
				leaked = strings.Contains(string(b), marker)
				if !leaked {
					time.Sleep(50 * time.Millisecond)
				}
			}
			if !leaked {
				t.Fatalf("bash did not put the value on probe's command line, so the construct tests nothing; it printed %q", out)
			}
			a := Analyze(Input{
				Text: text, Dialect: DialectBash, Cwd: ws,
				Path: strings.Split(path, ":"), Home: root,
				InspectionRoots: []string{ws}, WritableRoots: []string{ws},
				CredentialVars: []string{"GITHUB_TOKEN"},
			})
			if a.Denial == nil || a.Denial.Reason != govern.ReasonCredentialInArgv {
				var b strings.Builder
				assert.NilError(t, a.WriteReport(&b))
				t.Errorf("bash put the value on a command line; the analysis does not deny it:\n%s", b.String())
			}
		})
	}
}

// TestWriteThenRunDifferential runs a script twice with the tree changed
// between the runs (a symlink above it re-pointed, its directory moved or
// removed and replaced); where the second run printed something the pinned
// script does not, the analysis must link the change to that run.
func TestWriteThenRunDifferential(t *testing.T) {
	if shellPath(t, DialectBash) == "" {
		t.Skip("/bin/bash is not installed")
	}
	constructs := []string{
		`bash L/s.sh; ln -sfn e L; bash L/s.sh`,
		`bash L/s.sh; rm L; ln -s e L; bash L/s.sh`,
		`bash d/s.sh; mv d old && mv e d; bash d/s.sh`,
		`. d/s.sh; rm -rf d; cp -r e d; . d/s.sh`,
		`bash L/s.sh; mv -T M L; bash L/s.sh`,
		`bash L/s.sh; x=L; ln -sfn e "$x"; bash L/s.sh`,
		`bash L/s.sh; cd . && ln -sfn e L; bash ./L/s.sh`,
	}
	for _, text := range constructs {
		t.Run(text, func(t *testing.T) {
			root := plainTempDir(t)
			for name, body := range map[string]string{"d/s.sh": "echo GOOD\n", "e/s.sh": "echo EVIL\n"} {
				assert.NilError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755))
				assert.NilError(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o755))
			}
			assert.NilError(t, os.Symlink("d", filepath.Join(root, "L")))
			assert.NilError(t, os.Symlink("e", filepath.Join(root, "M")))
			// The analysis sees the tree before the run changes it.
			a := Analyze(Input{
				Text: text, Dialect: DialectBash, Cwd: root,
				Path:            []string{"/usr/local/bin", "/usr/bin", "/bin"},
				InspectionRoots: []string{root}, WritableRoots: []string{root},
			})
			cmd := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", text)
			cmd.Dir = root
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + root, "PWD=" + root}
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), "EVIL") {
				t.Fatalf("the second run did not run the other script, so the construct tests nothing; bash printed %q", out)
			}
			for _, p := range a.Pins {
				assert.Assert(t, !strings.Contains(string(p.Bytes), "EVIL"), "the analyzer pinned the script that runs second, so this construct tests nothing")
			}
			flagged := false
			for _, f := range a.Flags {
				flagged = flagged || f.Kind == FlagWriteThenRun
			}
			if !flagged || len(a.Links) == 0 {
				var b strings.Builder
				assert.NilError(t, a.WriteReport(&b))
				t.Errorf("bash ran another script the second time; the analysis does not flag write_then_run:\n%s", b.String())
			}
		})
	}
}

// plainTempDir is a temporary directory whose path has no characters a
// shell would read specially (t.TempDir's holds the subtest's name).
func plainTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "differential")
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, err = filepath.EvalSymlinks(dir)
	assert.NilError(t, err)
	return dir
}
