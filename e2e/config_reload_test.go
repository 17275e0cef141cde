package e2e

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConfigReloadCounted: a SIGHUP reload is counted on the admin
// listener by result, so an operator can alert on a reload that was
// refused (the old config and policy still in force) instead of finding
// it in the log. An invalid config, and a valid one that changes a field
// only a restart applies, are each refused, named in the log and counted
// refused; a valid one is counted applied. Before, nothing but the log
// said a reload had been refused.
func TestConfigReloadCounted(t *testing.T) {
	w := newWorld(t, false, e2ePolicy)
	g := startHTTPGW(t, w, gwOptions{logLevel: "info"})
	good, err := os.ReadFile(w.cfg)
	must(t, err)
	hup := func(want string) {
		t.Helper()
		before := strings.Count(g.stderr.String(), want)
		must(t, g.cmd.Process.Signal(syscall.SIGHUP))
		for deadline := time.Now().Add(10 * time.Second); strings.Count(g.stderr.String(), want) == before; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, g.stderr.String())
			}
		}
	}
	count := func(result string) float64 {
		t.Helper()
		return g.metric(t, "mitrity_config_reloads_total", `result="`+result+`"`)
	}
	if a, r := count("applied"), count("refused"); a != 0 || r != 0 {
		t.Fatalf("before any reload: applied %v refused %v", a, r)
	}
	// Invalid: an unknown key.
	must(t, os.WriteFile(w.cfg, append(append([]byte(nil), good...), "bogus_key: 1\n"...), 0o644))
	hup("reload refused")
	if !strings.Contains(g.stderr.String(), `unknown key \"bogus_key\"`) {
		t.Errorf("the refusal does not name the field:\n%s", g.stderr.String())
	}
	// Valid, but exec.enabled is announced at start.
	must(t, os.WriteFile(w.cfg, []byte(strings.Replace(string(good), "enabled: true", "enabled: false", 1)), 0o644))
	hup("reload refused")
	if !strings.Contains(g.stderr.String(), "exec.enabled changed: restart the gateway") {
		t.Errorf("the refusal does not name the fixed field:\n%s", g.stderr.String())
	}
	if a, r := count("applied"), count("refused"); a != 0 || r != 2 {
		t.Errorf("after two refused reloads: applied %v refused %v", a, r)
	}
	must(t, os.WriteFile(w.cfg, good, 0o644))
	hup("reloaded configuration and policy")
	if a, r := count("applied"), count("refused"); a != 1 || r != 2 {
		t.Errorf("after an applied reload: applied %v refused %v", a, r)
	}
}

// TestConcurrencyLimitHoldsAcrossReload: max_concurrent bounds the runs
// at once across a SIGHUP reload too. Each generation built its own
// executor with a fresh set of slots, so right after a reload another
// max_concurrent runs could start beside those still running under the
// last one (every reload while long runs ran added another set).
func TestConcurrencyLimitHoldsAcrossReload(t *testing.T) {
	w := newWorldBackend(t, false, e2ePolicy, "bubblewrap")
	g := startHTTPGW(t, w, gwOptions{maxConcurrent: 1, logLevel: "info"})
	tag := "sleep 43.75; true"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer g.busy(t, ctx, tag)()
	before := strings.Count(g.stderr.String(), "reloaded configuration and policy")
	must(t, g.cmd.Process.Signal(syscall.SIGHUP))
	for deadline := time.Now().Add(10 * time.Second); strings.Count(g.stderr.String(), "reloaded configuration and policy") == before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload in the log:\n%s", g.stderr.String())
		}
	}
	m := marker(t)
	r, err := callShell(t, ctx, g.client(t), map[string]any{"command": "echo " + m})
	must(t, err)
	if !r.isError || r.structured["reason"] != "concurrency_limit" || strings.Contains(r.stdout, m) {
		t.Fatalf("a second run beside the first, after a reload, with max_concurrent 1: %+v", r)
	}
}
