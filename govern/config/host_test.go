package config

import (
	"io/fs"
	"os/user"
	"strings"
	"time"
)

// fakeFile is a staged file for the fake host's Stat.
type fakeFile struct {
	name string
	mode fs.FileMode
}

func (f fakeFile) Name() string       { return f.name }
func (f fakeFile) Size() int64        { return 0 }
func (f fakeFile) Mode() fs.FileMode  { return f.mode }
func (f fakeFile) ModTime() time.Time { return time.Time{} }
func (f fakeFile) IsDir() bool        { return f.mode.IsDir() }
func (f fakeFile) Sys() any           { return nil }

// stagedFiles is the host every table test sees, whatever this machine has.
var stagedFiles = map[string]fs.FileMode{
	"/bin/bash":                 0o755,
	"/bin/sh":                   0o755,
	"/usr/local/bin/bash":       0o644,
	"/srv/shells/bash":          fs.ModeDir | 0o755,
	"/workspace":                fs.ModeDir | 0o755,
	"/srv/repo":                 fs.ModeDir | 0o755,
	"/workspace/README.md":      0o644,
	"/etc/mitrity/sandbox.json": 0o644,
	"/etc/mitrity/policy.yaml":  0o644,
}

// host is a fake host: non-root uid 1000 with HOME=/home/op, the staged
// files, and users "agent" (1001) and "root".
func fakeHost(files map[string]fs.FileMode) Loader {
	return Loader{
		Stat: func(name string) (fs.FileInfo, error) {
			if m, ok := files[name]; ok {
				return fakeFile{name: name[strings.LastIndexByte(name, '/')+1:], mode: m}, nil
			}
			return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
		},
		Getenv: func(k string) string {
			return map[string]string{"HOME": "/home/op"}[k]
		},
		Geteuid: func() int { return 1000 },
		LookupUser: func(name string) (*user.User, error) {
			switch name {
			case "agent":
				return &user.User{Username: name, Uid: "1001"}, nil
			case "root":
				return &user.User{Username: name, Uid: "0"}, nil
			case "op":
				return &user.User{Username: name, Uid: "1000"}, nil
			}
			return nil, user.UnknownUserError(name)
		},
		LookupUserID: func(uid string) (*user.User, error) {
			if uid == "1002" {
				return &user.User{Username: "second", Uid: uid}, nil
			}
			return nil, user.UnknownUserIdError(0)
		},
	}
}

func asRoot(l Loader) Loader {
	l.Geteuid = func() int { return 0 }
	return l
}
