package sandbox

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CredentialNames are, relative to every home directory, the ambient
// credential files and directories masked in every sandbox: the mandatory
// deny-read set.
var CredentialNames = []string{
	".ssh", ".aws", ".config/gcloud", ".kube", ".netrc", ".claude", ".claude.json",
	".docker/config.json", ".git-credentials", ".gnupg", ".config/gh", ".npmrc", ".pypirc",
}

// SystemDenyPaths are masked whatever the homes: container secrets.
var SystemDenyPaths = []string{"/run/secrets", "/var/run/secrets"}

// ProtectedNames are, relative to every workspace root, the paths kept
// read-only inside a writable root, so that the agent cannot plant what the
// host later runs: git hooks and config, shell rc files, MCP and editor
// configuration.
var ProtectedNames = []string{
	".git/hooks", ".git/config", ".gitmodules",
	".bashrc", ".bash_profile", ".profile", ".zshrc", ".bash_logout",
	".mcp.json", ".claude", ".vscode", ".idea",
}

// HomeDirs lists the home directories whose credential files are masked:
// /root, every directory under homeRoot (normally /home), every home named
// in passwd, and extra. Homes that are / or clearly not homes
// (/nonexistent) are dropped; the result is sorted and unique.
func HomeDirs(passwd io.Reader, homeRoot string, extra []string) []string {
	set := map[string]bool{"/root": true}
	if entries, err := os.ReadDir(homeRoot); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				set[filepath.Join(homeRoot, e.Name())] = true
			}
		}
	}
	if passwd != nil {
		sc := bufio.NewScanner(passwd)
		for sc.Scan() {
			f := strings.Split(sc.Text(), ":")
			if len(f) >= 6 && filepath.IsAbs(f[5]) {
				set[filepath.Clean(f[5])] = true
			}
		}
	}
	for _, h := range extra {
		set[filepath.Clean(h)] = true
	}
	var out []string
	for h := range set {
		if h == "/" || h == "/nonexistent" || strings.HasPrefix(h, "/nonexistent/") {
			continue
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// DenyCandidates is the deny-read set before it meets the file system:
// every credential name under every home, the system paths and extra.
func DenyCandidates(homes, extra []string) []string {
	var out []string
	for _, h := range homes {
		for _, n := range CredentialNames {
			out = append(out, filepath.Join(h, n))
		}
	}
	out = append(out, SystemDenyPaths...)
	out = append(out, extra...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ProtectedCandidates lists, for every workspace root, the protected paths
// (built-in names and extra).
func ProtectedCandidates(roots, extra []string) []string {
	var out []string
	for _, r := range roots {
		for _, n := range append(slices.Clone(ProtectedNames), extra...) {
			out = append(out, filepath.Join(r, n))
		}
	}
	return slices.Compact(out)
}

// Mask is one deny-set path that exists on the host, resolved.
type Mask struct {
	Path string // resolved: no symlink left
	Dir  bool
}

// hiddenPrefixes are replaced by fresh mounts inside the sandbox: a host
// path below them is invisible unless a workspace root re-binds it.
var hiddenPrefixes = []string{"/tmp", "/run", "/dev", "/proc"}

// ResolveMasks turns candidates into the masks to mount: each path is
// resolved through symlinks, a path that does not exist is skipped (nothing
// is ever created on the host to mask it), and a path the sandbox cannot see
// anyway (under its fresh /tmp, /run, /dev or /proc, outside every
// workspace root) needs no mask.
func ResolveMasks(candidates, roots []string) []Mask {
	seen := map[string]bool{}
	var out []Mask
	for _, c := range candidates {
		if _, err := os.Lstat(c); err != nil {
			continue // the common case, one system call
		}
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		st, err := os.Stat(real)
		if err != nil || seen[real] {
			continue
		}
		if hiddenInSandbox(real, roots) {
			continue
		}
		seen[real] = true
		out = append(out, Mask{Path: real, Dir: st.IsDir()})
	}
	return out
}

func hiddenInSandbox(p string, roots []string) bool {
	for _, r := range roots {
		if within(r, p) {
			return false
		}
	}
	for _, h := range hiddenPrefixes {
		if within(h, p) {
			return true
		}
	}
	return false
}

// ResolveProtected splits protected candidates into those that exist (to
// re-bind read-only) and those that do not (to check after the run).
func ResolveProtected(candidates []string) (present, absent []string) {
	for _, c := range candidates {
		if _, err := os.Lstat(c); err != nil {
			absent = append(absent, c)
			continue
		}
		// Bound at its resolved path: bubblewrap does not follow symlinks
		// in a destination the way the sandbox later will.
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue // a dangling symlink: nothing to bind, nothing to create
		}
		present = append(present, real)
	}
	return present, absent
}

// CreatedSince returns the paths of absent that exist now.
func CreatedSince(absent []string) []string {
	var out []string
	for _, p := range absent {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
