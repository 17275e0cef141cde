package service

import (
	"os"
	"path/filepath"

	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// ownFiles is every file and directory that is the gateway's own under cfg,
// with those its flags name (extra) and the programs it starts: what every
// run masks, what it keeps read-only, and what no run may ever rewrite.
func ownFiles(cfg *config.Config, extra []ownfiles.File) ownfiles.Set {
	s := ownfiles.Of(cfg)
	s.Add(extra...)
	if self, err := os.Executable(); err == nil {
		s.Add(ownfiles.File{Path: self, Role: ownfiles.Executes, What: "the gateway's own program"})
	}
	if p := egress.FindBinary(); p != "" {
		s.Add(ownfiles.File{Path: p, Role: ownfiles.Executes, What: "mitrity-egressproxy"})
	}
	return s
}

// helperFiles are the sandbox's programs, which a root supervisor runs as
// root: mitrity-sandboxrun, the init beside it, bubblewrap.
func helperFiles(helper, bwrap string) []ownfiles.File {
	var out []ownfiles.File
	if helper != "" {
		out = append(out, ownfiles.File{Path: helper, Role: ownfiles.Executes, What: "mitrity-sandboxrun"})
		if init := filepath.Join(filepath.Dir(helper), sandbox.InitName); regularFile(init) {
			out = append(out, ownfiles.File{Path: init, Role: ownfiles.Executes, What: sandbox.InitName})
		}
	}
	if bwrap != "" {
		out = append(out, ownfiles.File{Path: bwrap, Role: ownfiles.Executes, What: "bubblewrap"})
	}
	return out
}

// placement is who could rewrite a file of the gateway's under cfg and
// pol.
func placement(cfg *config.Config, pol *policy.Policy, runAs *plan.User) ownfiles.Placement {
	p := ownfiles.Placement{Euid: os.Geteuid(), WritableRoots: ownfiles.WritableRoots(cfg, pol)}
	if runAs != nil {
		p.RunAs = &ownfiles.Identity{UID: int(runAs.UID), GID: int(runAs.GID)}
	}
	return p
}

func regularFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
