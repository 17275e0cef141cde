package ownfiles

import (
	"os"
	"path/filepath"
	"testing"
)

func TestScrub(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real-policy.yaml")
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "policy.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := Set{
		{Path: "/srv/gw/mitrity-gateway.yaml", Role: Configures, What: "the gateway's configuration"},
		{Path: link, Role: Configures, What: "the policy"},
		{Path: "/srv/gw", Role: Keeps, What: "the audit log's directory"},
		{Path: "/usr/bin/bwrap", Role: Executes, What: "bubblewrap"},
	}
	sc := s.Scrubber([]string{"/srv/gw/ws"})
	for _, tc := range []struct{ in, want string }{
		{"bwrap: Can't create file at /srv/gw/mitrity-gateway.yaml: Read-only file system", "bwrap: Can't create file at <the gateway's configuration>: Read-only file system"},
		{"reading " + link + " failed", "reading <the policy> failed"},
		{"open " + real + ": denied", "open <the policy>: denied"},
		{"/srv/gw/audit.jsonl is full", "<the audit log's directory>/audit.jsonl is full"},
		{"/srv/gw", "<the audit log's directory>"},
		{"'/srv/gw/mitrity-gateway.yaml'", "'<the gateway's configuration>'"},
		{"Can't chdir to /srv/gw/ws: Permission denied", "Can't chdir to /srv/gw/ws: Permission denied"},
		{"/srv/gw/ws/sub/file", "/srv/gw/ws/sub/file"},
		{"/srv/gw/wsx/file", "<the audit log's directory>/wsx/file"},
		{"/srv/gw/mitrity-gateway.yaml.bak", "<the audit log's directory>/mitrity-gateway.yaml.bak"},
		{"/srv/gwx/file", "/srv/gwx/file"},
		{"/srv/gw/srv/gw/x", "<the audit log's directory><the audit log's directory>/x"},
		{"x/srv/gw/y", "x/srv/gw/y"},
		{"starting bubblewrap /usr/bin/bwrap: exec format error", "starting bubblewrap <bubblewrap>: exec format error"},
		{"/usr/bin/bwrapper", "/usr/bin/bwrapper"},
		{"/usr/bin/bwrap/x", "/usr/bin/bwrap/x"},
		{"nothing here", "nothing here"},
		{"", ""},
	} {
		if got := sc.Scrub(tc.in); got != tc.want {
			t.Errorf("Scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var nilSc *Scrubber
	if got := nilSc.Scrub("/srv/gw"); got != "/srv/gw" {
		t.Errorf("nil scrubber changed text: %q", got)
	}
}

func FuzzScrub(f *testing.F) {
	f.Add("/srv/gw/policy.yaml and /srv/gw/ws/x")
	sc := Set{{Path: "/srv/gw/policy.yaml", Role: Configures, What: "the policy"}, {Path: "/srv/gw", Role: Keeps, What: "kept"}}.Scrubber([]string{"/srv/gw/ws"})
	f.Fuzz(func(t *testing.T, s string) {
		out := sc.Scrub(s)
		// No own path survives as a whole path.
		for i := 0; i+len("/srv/gw/policy.yaml") <= len(out); i++ {
			if out[i:i+len("/srv/gw/policy.yaml")] == "/srv/gw/policy.yaml" && (i == 0 || !nameByte(out[i-1])) {
				end := i + len("/srv/gw/policy.yaml")
				if end == len(out) || !nameByte(out[end]) && out[end] != '/' {
					t.Fatalf("Scrub(%q) = %q keeps the policy's path", s, out)
				}
			}
		}
	})
}
