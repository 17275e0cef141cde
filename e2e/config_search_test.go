package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunCannotPlantUserConfig: a gateway that is not root, started with
// no --config and no $MITRITY_GATEWAY_CONFIG, reads
// ~/.config/mitrity/mitrity-gateway.yaml before /etc/mitrity's file and
// the embedded default, and the embedded default makes the working
// directory the workspace. A gateway serving a home therefore ran commands
// that could write the next gateway's configuration (observed: the next
// `mitrity-gateway exec` there loaded the file a command wrote). Whatever
// this gateway's own config, the places it would look are kept from every
// run: the run that makes the directory is killed and the entry moved
// aside, and the next gateway started there without --config does not
// read it.
func TestRunCannotPlantUserConfig(t *testing.T) {
	t.Parallel()
	w := newWorldBackend(t, true, sandboxPolicy, "auto")
	uid, gid := ensureUser(t)
	home := w.ws // the workspace is the user's home
	must(t, os.Mkdir(filepath.Join(home, ".config"), 0o755))
	must(t, os.Chown(filepath.Join(home, ".config"), int(uid), int(gid)))
	dir := filepath.Join(home, ".config", "mitrity")
	planted := filepath.Join(dir, "mitrity-gateway.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := w.gwEnv(t, ctx, "", []string{"HOME=" + home}, "--log-level", "error", "exec", "--config", w.cfg, "--admin-dir", w.admin, "--",
		"mkdir -p "+dir+" && echo 'planted_by_a_run: 1' > "+planted+"; sleep 3; echo ran")
	t.Logf("the run: %+v", r)
	if strings.Contains(r.stdout, "ran") {
		t.Errorf("the run that made %s went on: %+v", dir, r)
	}
	if _, err := os.Lstat(planted); err == nil {
		t.Errorf("a run planted %s on the host", planted)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s is still there after the run", dir)
	}
	// The next gateway, started in the home with no --config, finds no
	// file of the run's (it would refuse to start on the unknown key).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	r2 := runAsCtx(t, ctx2, runSpec{cred: w.asUser, dir: home, env: []string{"PATH=/usr/bin:/bin", "HOME=" + home}},
		w.bin, "--log-level", "error", "exec", "--admin-dir", w.admin, "--", "echo next")
	if strings.Contains(r2.stderr, "planted_by_a_run") {
		t.Fatalf("the next gateway loaded the configuration a run wrote: %+v", r2)
	}
}
