package config

import (
	_ "embed"
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// FileName is the config file's name in each place Locate looks.
const FileName = "mitrity-gateway.yaml"

// EnvConfig names the variable that points at the config file.
const EnvConfig = "MITRITY_GATEWAY_CONFIG"

// SystemPath is the host service's config file.
const SystemPath = "/etc/mitrity/" + FileName

// EmbeddedName stands for the embedded default in error messages.
const EmbeddedName = "embedded default config"

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the embedded default config, byte for byte (what
// `mitrity-gateway config print-default` shows).
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// UserPath is where a gateway that does not run as root looks for its own
// file: $XDG_CONFIG_HOME/mitrity/mitrity-gateway.yaml, else
// ~/.config/mitrity/mitrity-gateway.yaml. Empty for root, whose only file
// is SystemPath, and when neither variable is an absolute path.
func UserPath(euid int, getenv func(string) string) string {
	if euid == 0 {
		return ""
	}
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mitrity", FileName)
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".config", "mitrity", FileName)
	}
	return ""
}

// SearchPaths are the files Locate may pick when neither --config nor
// $MITRITY_GATEWAY_CONFIG names one: for this user (UserPath, and the
// same without $XDG_CONFIG_HOME, which the next gateway may be started
// without) and SystemPath. Whatever file a gateway runs with, a command
// it runs must not be able to create or replace any of these, or it
// would write the configuration of the next gateway started without a
// flag (ownfiles.Locates).
func SearchPaths(euid int, getenv func(string) string) []string {
	var out []string
	noXDG := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return ""
		}
		return getenv(k)
	}
	for _, p := range []string{UserPath(euid, getenv), UserPath(euid, noXDG), SystemPath} {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Locate finds the config file: the --config flag, else
// $MITRITY_GATEWAY_CONFIG, else (not as root) UserPath, else SystemPath,
// else the embedded default (embedded true, path empty).
//
// Never the working directory: MCP clients start the gateway in the
// project it governs, which is the workspace its commands may write, and a
// command that could write the next gateway's config would configure its
// own jailer. A file that exists but cannot be read is still returned:
// falling back to the next place because of a permission error would
// silently swap the operator's config for another.
func Locate(flag string) (path string, embedded bool) {
	return locate(flag, os.Geteuid(), os.Getenv, os.Stat)
}

func locate(flag string, euid int, getenv func(string) string, stat func(string) (fs.FileInfo, error)) (string, bool) {
	if flag != "" {
		return flag, false
	}
	if p := getenv(EnvConfig); p != "" {
		return p, false
	}
	for _, p := range []string{UserPath(euid, getenv), SystemPath} {
		if p == "" {
			continue
		}
		if _, err := stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return p, false
		}
	}
	return "", true
}

// StrayFile returns the path of a mitrity-gateway.yaml in dir, which
// Locate no longer reads, so that the gateway can say it ignored it; ""
// when there is none.
func StrayFile(dir string) string {
	p := filepath.Join(dir, FileName)
	if _, err := os.Lstat(p); err != nil {
		return ""
	}
	return p
}

// Loader loads configs against a host. Its zero value uses the real host:
// each nil field falls back to the os function named, all of them read-only
// probes. Tests set them to stage a host.
type Loader struct {
	Stat       func(name string) (fs.FileInfo, error) // os.Stat
	Getenv     func(key string) string                // os.Getenv
	Geteuid    func() int                             // os.Geteuid
	LookupUser func(name string) (*user.User, error)  // user.Lookup
	// LookupUserID resolves a numeric uid; nil: user.LookupId.
	LookupUserID func(uid string) (*user.User, error)
}

type host struct{ Loader }

func (l Loader) host() host {
	if l.Stat == nil {
		l.Stat = os.Stat
	}
	if l.Getenv == nil {
		l.Getenv = os.Getenv
	}
	if l.Geteuid == nil {
		l.Geteuid = os.Geteuid
	}
	if l.LookupUser == nil {
		l.LookupUser = user.Lookup
	}
	return host{l}
}

// defaultAuditPath: root's gateway is a service and writes under /var/lib; a
// user's writes under its XDG state directory. Empty when neither is known.
func (h host) defaultAuditPath() string {
	if h.Geteuid() == 0 {
		return "/var/lib/mitrity/audit.jsonl"
	}
	if s := h.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "mitrity", "audit.jsonl")
	}
	if home := h.Getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "mitrity", "audit.jsonl")
	}
	return ""
}

// Load reads, decodes and validates the config file at path.
func Load(path string) (*Config, error) { return Loader{}.Load(path) }

// LoadEmbedded is the embedded default for one local user, with cwd as the
// default working directory and so the single workspace root.
func LoadEmbedded(cwd string) (*Config, error) { return Loader{}.LoadEmbedded(cwd) }

// Load reads the file at path: the defaults, then the file, then Validate.
func (l Loader) Load(path string) (*Config, error) {
	var w wireConfig
	doc, err := yamlfile.ReadFile(path, &w)
	if err != nil {
		return nil, err
	}
	return l.build(path, &w, doc)
}

// Parse is Load on data already read; name stands for the file in errors and
// its directory resolves relative paths.
func (l Loader) Parse(name string, data []byte) (*Config, error) {
	var w wireConfig
	doc, err := yamlfile.Decode(name, data, &w)
	if err != nil {
		return nil, err
	}
	return l.build(name, &w, doc)
}

func (l Loader) build(name string, w *wireConfig, doc *yamlfile.Doc) (*Config, error) {
	h := l.host()
	dir := filepath.Dir(name)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	c := defaults(h)
	// Absolute: the sandbox masks the gateway's own files by path, and
	// bubblewrap takes only absolute ones (a relative --config made every
	// sandboxed run fail to start). Errors still name the file as given.
	c.File = name
	if abs, err := filepath.Abs(name); err == nil && name != "" {
		c.File = abs
	}
	c.doc = doc
	errs := &yamlfile.Errors{}
	c.overlay(w, doc, dir, errs)
	h.validate(c, errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadEmbedded loads the embedded default with cwd as exec.default_cwd, and
// /bin/sh as the shell on a host without /bin/bash.
func (l Loader) LoadEmbedded(cwd string) (*Config, error) {
	h := l.host()
	var w wireConfig
	if _, err := yamlfile.Decode(EmbeddedName, defaultYAML, &w); err != nil {
		return nil, err // a broken build; the tests keep it from shipping
	}
	c := defaults(h)
	c.Embedded = true
	// Positions in the embedded file mean nothing to an operator; name it
	// instead.
	c.doc = &yamlfile.Doc{File: EmbeddedName}
	errs := &yamlfile.Errors{}
	c.overlay(&w, c.doc, "/", errs)
	if cwd != "" {
		c.Exec.DefaultCwd = filepath.Clean(cwd)
	}
	if _, err := h.Stat(c.Exec.Shell); err != nil && c.Exec.Shell == DefaultShell {
		c.Exec.Shell = "/bin/sh"
	}
	h.validate(c, errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks a Config against the real host. Load and LoadEmbedded
// already did; a Config built or changed in code has not.
func (c *Config) Validate() error { return Loader{}.Validate(c) }

// Validate checks c against l's host.
func (l Loader) Validate(c *Config) error {
	errs := &yamlfile.Errors{}
	l.host().validate(c, errs)
	return errs.Err()
}
