package e2e

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// packageNames are the packages make packages builds.
var packageNames = []string{"mitrity-gateway", "mitrity-sandboxrun", "mitrity-egressproxy", "mitrity-hook", "mitrity-sidecar"}

// packagedFile is one file a package installs: its mode and owner.
type packagedFile struct {
	pkg, path string
	mode      fs.FileMode
}

// packagedFiles is every file (not directory) the packages install, all
// root:root. dpkg -L must list exactly these.
var packagedFiles = func() []packagedFile {
	var files []packagedFile
	add := func(pkg, path string, mode fs.FileMode) { files = append(files, packagedFile{pkg, path, mode}) }
	for _, p := range packageNames {
		add(p, "/usr/share/doc/"+p+"/copyright", 0o644)
		add(p, "/usr/share/doc/"+p+"/changelog.Debian.gz", 0o644)
		add(p, "/usr/share/lintian/overrides/"+p, 0o644)
		add(p, "/usr/share/man/man1/"+p+".1.gz", 0o644)
		add(p, "/usr/bin/"+p, 0o755)
	}
	add("mitrity-sandboxrun", "/usr/bin/mitrity-sandboxinit", 0o755)
	add("mitrity-sandboxrun", "/usr/share/man/man1/mitrity-sandboxinit.1.gz", 0o644)
	g := "mitrity-gateway"
	add(g, "/etc/mitrity/mitrity-gateway.yaml", 0o600)
	add(g, "/etc/logrotate.d/mitrity-gateway", 0o644)
	add(g, "/lib/systemd/system/mitrity-gateway.service", 0o644)
	add(g, "/lib/systemd/system/mitrity-admission.socket", 0o644)
	add(g, "/usr/lib/systemd/user/mitrity-gateway.service", 0o644)
	add(g, "/usr/lib/sysusers.d/mitrity.conf", 0o644)
	add(g, "/usr/lib/tmpfiles.d/mitrity.conf", 0o644)
	add(g, "/usr/share/mitrity/schema/mitrity-gateway.schema.json", 0o644)
	add(g, "/usr/share/mitrity/schema/mitrity-policy.schema.json", 0o644)
	add(g, "/usr/share/doc/mitrity-gateway/install.md", 0o644)
	add(g, "/usr/share/doc/mitrity-gateway/configuration.md", 0o644)
	return files
}()

const agentUser = "mitrity-agent" // exec.run_as of the packaged config

// runCmd runs argv with env, failing the test on an error unless allowFail;
// it returns stdout+stderr and the exit code.
func runCmd(t testing.TB, env []string, cred *syscall.Credential, allowFail bool, argv ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}, env...)
	cmd.Dir = "/"
	cmd.Stdin = nil // dpkg must never ask: no stdin, as in CI
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	if code != 0 && !allowFail {
		t.Fatalf("%v: exit %d\n%s", argv, code, out.String())
	}
	return out.String(), code
}

// nativeArch is dpkg's architecture of this host.
func nativeArch(t testing.TB) string {
	out, _ := runCmd(t, nil, nil, false, "dpkg", "--print-architecture")
	return strings.TrimSpace(out)
}

// buildPackages runs make packages for this host's architecture into dir,
// with DEB_VERSION when version is not empty.
func buildPackages(t testing.TB, dir, version string) {
	t.Helper()
	// The test's environment (Go's settings), less what an outer make
	// (make test) or a packaging variable would change here.
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "MAKEFLAGS", k == "MFLAGS", k == "MAKELEVEL", k == "DIST", k == "PKG_ARCHES", strings.HasPrefix(k, "DEB_"):
			continue
		}
		env = append(env, kv)
	}
	if version != "" {
		env = append(env, "DEB_VERSION="+version)
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", repoRoot(t), "packages", "DIST="+dir, "PKG_ARCHES="+nativeArch(t))
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make packages: %v\n%s", err, out)
	}
}

// debsIn returns the five packages of arch in dir, all of one version.
func debsIn(t testing.TB, dir, arch string) (debs []string, version string) {
	t.Helper()
	for _, p := range packageNames {
		m, err := filepath.Glob(filepath.Join(dir, p+"_*_"+arch+".deb"))
		must(t, err)
		if len(m) != 1 {
			t.Fatalf("%s: want one %s package for %s, found %v", dir, p, arch, m)
		}
		out, _ := runCmd(t, nil, nil, false, "dpkg-deb", "-f", m[0], "Version")
		v := strings.TrimSpace(out)
		if version != "" && v != version {
			t.Fatalf("%s is version %s, the others %s", m[0], v, version)
		}
		version = v
		debs = append(debs, m[0])
	}
	return debs, version
}

// TestPackages installs the five packages with dpkg as an operator would,
// checks every file they put down, runs the installed gateway as root (the
// host service's config) and as an unprivileged user (their own config),
// upgrades to a second build keeping a conffile the operator edited,
// removes, then purges, checking what each step leaves.
//
// It changes the host (/usr/bin, /etc/mitrity, /var/lib/mitrity, a system
// user), so it is not parallel: Go runs it while no parallel test runs,
// and every change is undone before it returns, failed or not. Nothing
// else in e2e reads those paths: the other tests run bin/ through
// MITRITY_BIN, with helpers beside the gateway and --config given.
func TestPackages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dpkg -i needs root")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "lintian", "systemd-sysusers", "systemd-tmpfiles"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required (scripts/deps installs lintian; dpkg and systemd come with Debian)", tool)
		}
	}
	for _, p := range packageNames {
		if out, code := runCmd(t, nil, nil, true, "dpkg-query", "-W", "-f=${db:Status-Status}", p); code == 0 && strings.TrimSpace(out) != "not-installed" && out != "" {
			t.Fatalf("%s is already on this host (%s): this test will not touch an operator's install", p, out)
		}
	}
	if _, err := os.Stat("/etc/mitrity"); err == nil {
		t.Fatal("/etc/mitrity exists: this test will not touch an operator's config")
	}
	arch := nativeArch(t)

	// The first build: make test's (MITRITY_DIST), else one made here.
	dist := os.Getenv("MITRITY_DIST")
	if dist == "" {
		dist = t.TempDir()
		buildPackages(t, dist, "")
	}
	v1debs, v1 := debsIn(t, dist, arch)
	upstream := v1[:strings.LastIndex(v1, "-")]

	t.Run("lintian", func(t *testing.T) { lintianClean(t, dist) })
	t.Run("control", func(t *testing.T) { checkControl(t, v1debs, v1) })

	restore := hostBefore(t)
	t.Cleanup(restore)

	// Install as an operator does, all at once, no questions.
	runCmd(t, nil, nil, false, append([]string{"dpkg", "-i"}, v1debs...)...)
	checkInstalled(t, v1)
	uid, gid := ensureUser(t)
	runInstalled(t, &syscall.Credential{Uid: uid, Gid: gid})

	// The operator edits the conffile.
	conf := "/etc/mitrity/mitrity-gateway.yaml"
	body, err := os.ReadFile(conf)
	must(t, err)
	edited := bytes.Replace(body, []byte("    max_concurrent: 4"), []byte("    max_concurrent: 3"), 1)
	if bytes.Equal(edited, body) {
		t.Fatal("the packaged config has no max_concurrent: 4 to edit")
	}
	edited = append(edited, "# edited by the operator\n"...)
	must(t, os.WriteFile(conf, edited, 0o600))

	// Upgrade to a second build of a later version.
	v2dist := t.TempDir()
	buildPackages(t, v2dist, upstream+"+e2e2")
	v2debs, v2 := debsIn(t, v2dist, arch)
	if _, code := runCmd(t, nil, nil, true, "dpkg", "--compare-versions", v2, "gt", v1); code != 0 {
		t.Fatalf("%s does not sort after %s", v2, v1)
	}
	runCmd(t, nil, nil, false, append([]string{"dpkg", "--force-confold", "-i"}, v2debs...)...)
	checkInstalled(t, v2)
	if got, err := os.ReadFile(conf); err != nil || !bytes.Equal(got, edited) {
		t.Fatalf("the upgrade did not keep the operator's %s (%v):\n%s", conf, err, got)
	}
	runCmd(t, []string{"HOME=/root"}, nil, false, "/usr/bin/mitrity-gateway", "validate")

	// remove: the binaries go; config and state stay (Debian policy).
	var listed []string
	for _, p := range packageNames {
		out, _ := runCmd(t, nil, nil, false, "dpkg", "-L", p)
		listed = append(listed, strings.Fields(out)...)
	}
	runCmd(t, nil, nil, false, append([]string{"dpkg", "-r"}, packageNames...)...)
	for _, f := range packagedFiles {
		_, err := os.Lstat(f.path)
		kept := f.path == conf || f.path == "/etc/logrotate.d/mitrity-gateway"
		if kept && err != nil {
			t.Errorf("remove deleted the conffile %s: %v", f.path, err)
		}
		if !kept && err == nil {
			t.Errorf("remove left %s", f.path)
		}
	}
	for _, d := range []string{"/var/lib/mitrity/audit.jsonl", "/var/lib/mitrity/workspace"} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("remove deleted state %s: %v", d, err)
		}
	}

	// purge: all that the packages made goes, but the audit trail, which
	// the package keeps on purpose (docs/install.md) and says so.
	out, _ := runCmd(t, nil, nil, false, append([]string{"dpkg", "--purge"}, packageNames...)...)
	if !strings.Contains(out, "purge keeps the audit trail") {
		t.Errorf("purge did not say it kept the audit trail:\n%s", out)
	}
	for _, p := range listed {
		if p == "/var/lib/mitrity" || !strings.Contains(p, "mitrity") {
			continue // shared directories such as /usr/bin
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("purge left %s", p)
		}
	}
	for _, p := range []string{"/etc/mitrity", "/var/lib/mitrity/workspace"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("purge left %s", p)
		}
	}
	left, _ := filepath.Glob("/var/lib/mitrity/*")
	if len(left) != 1 || left[0] != "/var/lib/mitrity/audit.jsonl" {
		t.Errorf("purge should leave the audit log alone in /var/lib/mitrity, left %v", left)
	}
	if _, err := user.Lookup(agentUser); err != nil {
		t.Errorf("purge removed the system user %s (Debian keeps system users: files may still be theirs): %v", agentUser, err)
	}
	for _, p := range packageNames {
		if out, code := runCmd(t, nil, nil, true, "dpkg-query", "-W", "-f=${db:Status-Status}", p); code == 0 && strings.TrimSpace(out) != "not-installed" {
			t.Errorf("%s still known to dpkg: %s", p, out)
		}
	}
}

// hostBefore records what the packages change and returns the undo:
// purge, and remove what did not exist before (the user, the state and
// config directories), restoring /run/mitrity's mode and owner. It then
// checks the host is as it was.
func hostBefore(t *testing.T) func() {
	t.Helper()
	_, userErr := user.Lookup(agentUser)
	hadUser := userErr == nil
	_, stateErr := os.Lstat("/var/lib/mitrity")
	hadState := stateErr == nil
	// A root gateway run without a config (another test, a person) may
	// have left an audit log there: it gets back its size.
	stateSizes := map[string]int64{}
	if entries, err := os.ReadDir("/var/lib/mitrity"); err == nil {
		for _, e := range entries {
			if fi, err := e.Info(); err == nil {
				stateSizes[e.Name()] = fi.Size()
			}
		}
	}
	var run0 *syscall.Stat_t
	if fi, err := os.Lstat("/run/mitrity"); err == nil {
		run0 = fi.Sys().(*syscall.Stat_t)
	}
	return func() {
		cmd := exec.Command("dpkg", append([]string{"--purge"}, packageNames...)...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("cleanup: dpkg --purge: %v\n%s", err, out)
		}
		os.RemoveAll("/etc/mitrity")
		if !hadState {
			os.RemoveAll("/var/lib/mitrity")
		} else if entries, err := os.ReadDir("/var/lib/mitrity"); err == nil {
			for _, e := range entries {
				p := filepath.Join("/var/lib/mitrity", e.Name())
				if size, ok := stateSizes[e.Name()]; !ok {
					os.RemoveAll(p)
				} else if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() > size {
					os.Truncate(p, size)
				}
			}
		}
		if !hadUser {
			if out, err := exec.Command("userdel", agentUser).CombinedOutput(); err != nil {
				t.Errorf("cleanup: userdel %s: %v %s", agentUser, err, out)
			}
			if _, err := user.LookupGroup(agentUser); err == nil {
				exec.Command("groupdel", agentUser).Run()
			}
		}
		if run0 != nil {
			os.Chmod("/run/mitrity", fs.FileMode(run0.Mode&0o7777))
			os.Chown("/run/mitrity", int(run0.Uid), int(run0.Gid))
		} else {
			os.Remove("/run/mitrity") // only when empty: another gateway may use it
		}
		for _, p := range packagedFiles {
			if _, err := os.Lstat(p.path); err == nil {
				t.Errorf("cleanup: %s is still on the host", p.path)
			}
		}
		if _, err := user.Lookup(agentUser); (err == nil) != hadUser {
			t.Errorf("cleanup: user %s: existed before %v, now %v", agentUser, hadUser, err == nil)
		}
	}
}

// checkInstalled checks the installed packages: version, every file's
// path, mode and owner against packagedFiles (and nothing more), the
// directories and user the scripts make, the conffile registered.
func checkInstalled(t *testing.T, version string) {
	t.Helper()
	want := map[string]packagedFile{}
	for _, f := range packagedFiles {
		want[f.path] = f
	}
	for _, p := range packageNames {
		out, _ := runCmd(t, nil, nil, false, "dpkg-query", "-W", "-f=${Version} ${db:Status-Status}", p)
		if out != version+" installed" {
			t.Errorf("%s: %q, want %s installed", p, out, version)
		}
		list, _ := runCmd(t, nil, nil, false, "dpkg", "-L", p)
		for _, path := range strings.Fields(list) {
			fi, err := os.Lstat(path)
			if err != nil {
				t.Errorf("%s lists %s: %v", p, path, err)
				continue
			}
			if d, err := os.Stat(path); err == nil && d.IsDir() {
				continue // a directory, or /lib where /lib is /usr/lib
			}
			f, ok := want[path]
			if !ok || f.pkg != p {
				t.Errorf("%s installs %s, which the test does not expect", p, path)
				continue
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode() != f.mode || st.Uid != 0 || st.Gid != 0 {
				t.Errorf("%s: mode %v uid %d gid %d, want %v root:root", path, fi.Mode(), st.Uid, st.Gid, f.mode)
			}
			delete(want, path)
		}
	}
	for path, f := range want {
		t.Errorf("%s does not install %s", f.pkg, path)
	}
	confs, _ := runCmd(t, nil, nil, false, "dpkg-query", "-W", "-f=${Conffiles}", "mitrity-gateway")
	for _, c := range []string{"/etc/mitrity/mitrity-gateway.yaml", "/etc/logrotate.d/mitrity-gateway"} {
		if !strings.Contains(confs, c+" ") {
			t.Errorf("%s is not a conffile: %s", c, confs)
		}
	}

	u, err := user.Lookup(agentUser)
	if err != nil {
		t.Fatalf("the package did not create %s: %v", agentUser, err)
	}
	pw, _ := runCmd(t, nil, nil, false, "getent", "passwd", agentUser)
	fields := strings.Split(strings.TrimSpace(pw), ":")
	if uid, _ := strconv.Atoi(u.Uid); uid == 0 || uid >= 1000 || fields[5] != "/var/lib/mitrity/workspace" || fields[6] != "/usr/sbin/nologin" {
		t.Errorf("%s: want a system user with home /var/lib/mitrity/workspace and no login shell: %s", agentUser, pw)
	}
	auid, _ := strconv.Atoi(u.Uid)
	agid, _ := strconv.Atoi(u.Gid)
	for _, d := range []struct {
		path     string
		mode     fs.FileMode
		uid, gid int
	}{
		{"/var/lib/mitrity", 0o711, 0, 0},
		{"/var/lib/mitrity/workspace", 0o700, auid, agid},
		{"/run/mitrity", 0o711, 0, 0},
	} {
		fi, err := os.Lstat(d.path)
		if err != nil {
			t.Errorf("%s: %v", d.path, err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != fs.ModeDir|d.mode || int(st.Uid) != d.uid || int(st.Gid) != d.gid {
			t.Errorf("%s: %v %d:%d, want %v %d:%d", d.path, fi.Mode(), st.Uid, st.Gid, d.mode, d.uid, d.gid)
		}
	}
}

// runInstalled runs the installed gateway: as root on the packaged config
// (the host service's: commands run as mitrity-agent in its workspace),
// and as cred on a config of the user's own; without one, the user's
// gateway refuses to start rather than read root's.
func runInstalled(t *testing.T, cred *syscall.Credential) {
	t.Helper()
	gw := "/usr/bin/mitrity-gateway"
	root := []string{"HOME=/root"}
	runCmd(t, root, nil, false, gw, "validate")
	runCmd(t, root, nil, false, gw, "doctor")
	out, _ := runCmd(t, root, nil, false, gw, "--log-level", "error", "exec", "--json", "--", "id -un; pwd")
	sc := structured(t, out)
	if sc["stdout"] != agentUser+"\n/var/lib/mitrity/workspace\n" || sc["sandbox_mode"] != "bubblewrap" {
		t.Errorf("root's governed exec: want %s in its workspace at full strength: %v", agentUser, sc)
	}
	if fi, err := os.Stat("/var/lib/mitrity/audit.jsonl"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the host service's audit log: %v %v", fi, err)
	}

	// Not t.TempDir: its parent is root's alone, and the user must reach it.
	home, err := os.MkdirTemp("", "mitrity-e2e-pkg-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(home) })
	must(t, os.Chmod(home, 0o755))
	for _, d := range []string{"config/mitrity", "state", "run", "ws"} {
		must(t, os.MkdirAll(filepath.Join(home, d), 0o700))
	}
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run")}
	must(t, filepath.WalkDir(home, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, int(cred.Uid), int(cred.Gid))
	}))
	if out, code := runCmd(t, env, cred, true, gw, "validate"); code == 0 || !strings.Contains(out, "/etc/mitrity/mitrity-gateway.yaml") || !strings.Contains(out, "permission denied") {
		t.Errorf("a user with no config of their own must be refused root's 0600 config, not given another: exit %d\n%s", code, out)
	}
	def, _ := runCmd(t, env, cred, false, gw, "config", "print-default")
	cfg := strings.Replace(def, "  # default_cwd:", "  default_cwd: "+filepath.Join(home, "ws")+"\n  #", 1)
	cfgPath := filepath.Join(home, "config/mitrity/mitrity-gateway.yaml")
	must(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	must(t, os.Chown(cfgPath, int(cred.Uid), int(cred.Gid)))
	runCmd(t, env, cred, false, gw, "validate")
	runCmd(t, env, cred, false, gw, "doctor")
	out, _ = runCmd(t, env, cred, false, gw, "--log-level", "error", "exec", "--json", "--", "id -un")
	sc = structured(t, out)
	if sc["stdout"] != testUser+"\n" || sc["sandbox_mode"] != "bubblewrap" {
		t.Errorf("the user's governed exec: want %s at full strength: %v", testUser, sc)
	}
}

func structured(t *testing.T, out string) map[string]any {
	t.Helper()
	var res struct {
		StructuredContent map[string]any
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exec --json: %v\n%s", err, out)
	}
	return res.StructuredContent
}

// checkControl checks each package's dependencies: the gateway and the
// sidecar on this very version of their helpers, the sandbox on
// bubblewrap >= 0.5.0, what links libc on libc6.
func checkControl(t *testing.T, debs []string, version string) {
	for _, deb := range debs {
		name := strings.SplitN(filepath.Base(deb), "_", 2)[0]
		out, _ := runCmd(t, nil, nil, false, "dpkg-deb", "-f", deb, "Depends")
		deps := strings.TrimSpace(out)
		var want []string
		switch name {
		case "mitrity-gateway", "mitrity-sidecar":
			want = []string{"mitrity-sandboxrun (= " + version + ")", "mitrity-egressproxy (= " + version + ")"}
		case "mitrity-sandboxrun":
			want = []string{"bubblewrap (>= 0.5.0)"}
		}
		for _, w := range want {
			if !strings.Contains(deps, w) {
				t.Errorf("%s: Depends %q lacks %q", name, deps, w)
			}
		}
	}
}

// lintianClean runs lintian on every package in dir (both architectures):
// no error, and every warning one docs/install.md lists with its reason.
func lintianClean(t *testing.T, dir string) {
	debs, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	must(t, err)
	if len(debs) == 0 {
		t.Fatalf("no packages in %s", dir)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs/install.md"))
	must(t, err)
	documented := map[string]bool{}
	if i := bytes.Index(doc, []byte("\n## Lintian")); i >= 0 {
		section := doc[i+1:]
		if j := bytes.Index(section, []byte("\n## ")); j >= 0 {
			section = section[:j]
		}
		for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)`").FindAllSubmatch(section, -1) {
			documented[string(m[1])] = true
		}
	}
	out, _ := runCmd(t, nil, nil, true, append([]string{"lintian", "--tag-display-limit", "0"}, debs...)...)
	var bad []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		switch f[0] {
		case "E:":
			bad = append(bad, line)
		case "W:":
			if !documented[f[2]] {
				bad = append(bad, line+" (not listed in docs/install.md, ## Lintian)")
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("lintian:\n%s", strings.Join(bad, "\n"))
	}
}

// TestDebVersion: packaging/debversion turns a checkout's tags into
// Debian versions that sort as the releases do.
func TestDebVersion(t *testing.T) {
	t.Parallel()
	script := filepath.Join(repoRoot(t), "packaging/debversion")
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	version := func() string {
		t.Helper()
		out, err := exec.Command(script, dir).Output()
		if err != nil {
			t.Fatalf("debversion: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("1"), 0o644))
	git("add", "f")
	git("commit", "-qm", "one")
	sha := func() string {
		out, err := exec.Command("git", "-C", dir, "rev-parse", "--short=12", "HEAD").Output()
		must(t, err)
		return strings.TrimSpace(string(out))
	}
	var seen []string
	step := func(want string) {
		t.Helper()
		got := version()
		if got != want {
			t.Fatalf("debversion: %q, want %q", got, want)
		}
		seen = append(seen, got)
	}
	step("0.0.0~git20260102030405." + sha())
	git("tag", "v1.2.0-rc1")
	step("1.2.0~rc1")
	git("tag", "v1.2.0")
	step("1.2.0")
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("2"), 0o644))
	step("1.2.0+dirty")
	git("commit", "-qam", "two")
	step("1.2.0+git1." + sha())
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("3"), 0o644))
	step("1.2.0+git1." + sha() + ".dirty")
	// Each later state sorts after the one before (the dirty tree after
	// its commit), and the untagged start before every release.
	order := []string{seen[0], seen[1], seen[2], seen[3]}
	for i := 1; i < len(order); i++ {
		if exec.Command("dpkg", "--compare-versions", order[i], "gt", order[i-1]).Run() != nil {
			t.Errorf("%s does not sort after %s", order[i], order[i-1])
		}
	}
	if exec.Command("dpkg", "--compare-versions", seen[4], "gt", seen[2]).Run() != nil {
		t.Errorf("%s does not sort after %s", seen[4], seen[2])
	}
}
