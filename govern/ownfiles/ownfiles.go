package ownfiles

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Role is what the gateway does with one of its files.
type Role int

const (
	// Configures: read to decide what runs and how (the config, the
	// policy, feeds, the sandbox settings file, bearer tokens, credential
	// sources). Nothing the gateway runs may write it, now or by
	// replacing it; every run masks it.
	Configures Role = iota + 1
	// Executes: a program the gateway starts (its helpers, bubblewrap, a
	// credential command). Nothing a run can write; read-only in every
	// run, since the sandbox itself runs some of them.
	Executes
	// Keeps: a directory the gateway writes (the audit log, sockets,
	// per-run state). Every run masks it, wherever it is.
	Keeps
	// Locates: a place a gateway looks for its configuration when no
	// flag names one (config.SearchPaths), whether or not this one uses
	// it. Read-only in every run, like a program; one that does not
	// exist is watched, so a run that makes it is killed and what it
	// made moved aside: the next gateway must not read a command's file.
	Locates
)

func (r Role) String() string {
	switch r {
	case Configures:
		return "configures"
	case Executes:
		return "executes"
	case Keeps:
		return "keeps"
	case Locates:
		return "locates"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// File is one of the gateway's own files or directories.
type File struct {
	Path string // absolute, as configured
	Role Role
	// Where names the setting that names it, for errors: a config
	// position ("mitrity-gateway.yaml:12:9: policy"), a flag, or the
	// file itself.
	Where yamlfile.Loc
	// What says what it is, in an error's words ("the policy").
	What string
}

// Set is every file the gateway treats as its own.
type Set []File

// Paths returns the absolute paths of the files with one of roles,
// cleaned, sorted and unique.
func (s Set) Paths(roles ...Role) []string {
	var out []string
	for _, f := range s {
		if slices.Contains(roles, f.Role) && filepath.IsAbs(f.Path) {
			out = append(out, filepath.Clean(f.Path))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Add appends files, dropping empty paths.
func (s *Set) Add(fs ...File) {
	for _, f := range fs {
		if f.Path != "" {
			*s = append(*s, f)
		}
	}
}

// describe is what an error calls f.
func (f File) describe() string {
	if f.What != "" {
		return f.What
	}
	return strings.TrimSpace(f.Where.Path)
}
