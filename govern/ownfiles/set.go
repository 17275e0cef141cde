package ownfiles

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Of is every file cfg makes the gateway's own: the config itself, the
// policy, the threat-intel feed, the sandbox settings file, each
// credential source (a file, or a command's program and the files it
// names), and the directories it keeps (the audit log's, the runtime
// directory of sockets and per-run state, the admission socket's, and
// $XDG_RUNTIME_DIR itself, which holds the user's agent sockets). Files
// named by flags (a token file, the admin socket directory) and the
// helper programs are added by the caller.
func Of(cfg *config.Config) Set {
	var s Set
	s.Add(File{Path: cfg.File, Role: Configures, Where: yamlfile.Loc{File: cfg.File}, What: "the gateway's configuration"})
	s.Add(File{Path: cfg.Policy, Role: Configures, Where: cfg.Loc("policy"), What: "the policy that judges every command"})
	s.Add(File{Path: cfg.ThreatIntel.Feed, Role: Configures, Where: cfg.Loc("threat_intel.feed"), What: "the threat-intel feed"})
	s.Add(File{Path: cfg.Exec.Sandbox.SettingsFile, Role: Configures, Where: cfg.Loc("exec.sandbox.settings_file"), What: "the sandbox settings file"})
	ids := make([]string, 0, len(cfg.Credentials))
	for id := range cfg.Credentials {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		src := cfg.Credentials[id]
		p := yamlfile.Key("credentials", id)
		s.Add(File{Path: src.File, Role: Configures, Where: cfg.Loc(p + ".file"), What: "the credential " + id})
		if len(src.Command) > 0 {
			s.Add(File{Path: src.Command[0], Role: Executes, Where: cfg.Loc(yamlfile.Index(p+".command", 0)), What: "the program that fetches the credential " + id})
			for i, a := range src.Command[1:] {
				// What the command reads is as much the credential as
				// the command: an argument naming an existing file.
				if filepath.IsAbs(a) && regular(a) {
					s.Add(File{Path: a, Role: Configures, Where: cfg.Loc(yamlfile.Index(p+".command", i+1)), What: "a file the credential " + id + " is read from"})
				}
			}
		}
	}
	if cfg.Audit.Path != "" {
		s.Add(File{Path: filepath.Dir(cfg.Audit.Path), Role: Keeps, Where: cfg.Loc("audit.path"), What: "the audit log's directory"})
	}
	rt := govern.RuntimeDir(os.Geteuid(), os.Getenv)
	s.Add(File{Path: rt, Role: Keeps, What: "the gateway's runtime directory"})
	if a := cfg.Admission.Socket; a != "" {
		s.Add(File{Path: filepath.Dir(a), Role: Keeps, Where: cfg.Loc("admission.socket"), What: "the admission socket's directory"})
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && os.Geteuid() != 0 {
		s.Add(File{Path: x, Role: Keeps, What: "$XDG_RUNTIME_DIR"})
	}
	for _, p := range config.SearchPaths(os.Geteuid(), os.Getenv) {
		s.Add(File{Path: p, Role: Locates, What: "a place the gateway looks for its configuration"})
	}
	return s
}

// WritableRoots is every workspace root a run under pol may write: each
// profile's roots, resolved against exec.default_cwd (which is the single
// root of a profile that lists none).
func WritableRoots(cfg *config.Config, pol *policy.Policy) []string {
	var out []string
	add := func(p policy.Profile) {
		out = append(out, p.WorkspaceRoots.Resolve(cfg.Exec.DefaultCwd)...)
	}
	for _, p := range pol.Profiles {
		add(p)
	}
	if len(pol.Profiles) == 0 && cfg.Exec.DefaultCwd != "" {
		out = append(out, filepath.Clean(cfg.Exec.DefaultCwd))
	}
	out = slices.DeleteFunc(out, func(r string) bool { return r == "" || !strings.HasPrefix(r, "/") })
	slices.Sort(out)
	return slices.Compact(out)
}

func regular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
