package sandbox

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A Named path is one entry of the mandatory deny set or of the protected
// set, relative to a home directory or a workspace root, with why it is
// there.
type Named struct {
	Name   string
	Reason string
}

// DenySet is the mandatory deny-read set: relative to every home
// directory, the ambient credential stores masked in every run (a whole
// directory where the store is one). Nothing relaxes it.
var DenySet = []Named{
	{".ssh", "SSH keys and agent configuration"},
	{".gnupg", "GnuPG private keys"},
	{".aws", "AWS credentials and SSO tokens"},
	{".azure", "Azure CLI tokens"},
	{".config/gcloud", "Google Cloud credentials"},
	{".oci", "Oracle Cloud keys"},
	{".kube", "Kubernetes contexts and tokens"},
	{".minikube", "minikube client certificates"},
	{".docker", "Docker registry credentials, contexts and Docker Desktop's socket"},
	{".config/containers/auth.json", "Podman and Buildah registry credentials"},
	{".netrc", "machine passwords (curl, git, ftp)"},
	{".git-credentials", "git's store helper"},
	{".config/git/credentials", "git's store helper (XDG location)"},
	{".config/gh", "GitHub CLI tokens"},
	{".config/hub", "hub's GitHub token"},
	{".config/glab-cli", "GitLab CLI tokens"},
	{".npmrc", "npm registry tokens"},
	{".yarnrc.yml", "Yarn registry tokens"},
	{".pypirc", "PyPI upload tokens"},
	{".config/pip", "pip index credentials"},
	{".gem/credentials", "RubyGems API key"},
	{".cargo/credentials.toml", "crates.io token"},
	{".cargo/credentials", "crates.io token (old name)"},
	{".m2/settings.xml", "Maven repository passwords"},
	{".m2/settings-security.xml", "Maven master password"},
	{".gradle/gradle.properties", "Gradle repository and signing credentials"},
	{".nuget/NuGet/NuGet.Config", "NuGet feed credentials"},
	{".terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"},
	{".terraformrc", "Terraform CLI credentials"},
	{".vault-token", "HashiCorp Vault token"},
	{".pgpass", "PostgreSQL passwords"},
	{".my.cnf", "MySQL passwords"},
	{".config/rclone", "rclone remotes' secrets"},
	{".s3cfg", "s3cmd keys"},
	{".boto", "gsutil and boto credentials"},
	{".config/doctl", "DigitalOcean token"},
	{".config/op", "1Password CLI sessions"},
	{".password-store", "pass's encrypted store and key ids"},
	{".config/sops", "SOPS age keys"},
	{".local/share/keyrings", "GNOME keyring"},
	{".local/share/kwalletd", "KDE wallet"},
	{".pki", "NSS certificate and key database"},
	{".mozilla", "Firefox profiles: cookies and saved passwords"},
	{".config/google-chrome", "Chrome profiles: cookies and saved passwords"},
	{".config/chromium", "Chromium profiles: cookies and saved passwords"},
	{".config/BraveSoftware", "Brave profiles: cookies and saved passwords"},
	{".config/microsoft-edge", "Edge profiles: cookies and saved passwords"},
	{".claude", "Claude Code credentials and settings"},
	{".claude.json", "Claude Code account state"},
	{".codex", "Codex CLI credentials"},
	{".gemini", "Gemini CLI credentials"},
	{".local/share/opencode", "OpenCode provider credentials"},
	{".config/github-copilot", "GitHub Copilot tokens"},
	{".config/configstore", "tokens of npm-based CLIs (firebase, vercel, ...)"},
	{".fly", "Fly.io token"},
	{".wrangler", "Cloudflare Wrangler token"},
	{".config/.wrangler", "Cloudflare Wrangler token (XDG location)"},
	{".bash_history", "shell history: commands typed with secrets in them"},
	{".zsh_history", "shell history"},
	{".zhistory", "shell history"},
	{".histfile", "shell history"},
	{".local/share/fish/fish_history", "shell history"},
	{".python_history", "Python REPL history"},
	{".node_repl_history", "Node REPL history"},
	{".psql_history", "psql history"},
	{".mysql_history", "MySQL client history"},
	{".sqlite_history", "SQLite shell history"},
	{".rediscli_history", "Redis CLI history"},
	{".lesshst", "less's search history"},
}

// CredentialNames are DenySet's names.
var CredentialNames = names(DenySet)

// SystemDenyPaths are masked whatever the homes: container secrets.
var SystemDenyPaths = []string{"/run/secrets", "/var/run/secrets"}

// Protected are, relative to every workspace root, the paths a program
// on the host reads its configuration or commands from without being
// asked: a run may read them, never change, replace or create them (see
// planProtection). A repository's own metadata is found at plan time
// instead (gitDirs): these two stand for a repository not made yet, whose
// creation is reported.
var Protected = []Named{
	{".git/hooks", "git runs its hooks"},
	{".git/config", "git runs what its config names (fsmonitor, pager, filters, helpers)"},
	{".gitmodules", "git submodule commands read it"},
	{".bashrc", "bash runs it when the root is a home directory"},
	{".bash_profile", "bash runs it at login"},
	{".bash_login", "bash runs it at login"},
	{".profile", "sh and bash run it at login"},
	{".bash_logout", "bash runs it at logout"},
	{".zshrc", "zsh runs it"},
	{".zshenv", "zsh runs it for every shell"},
	{".zprofile", "zsh runs it at login"},
	{".zlogin", "zsh runs it at login"},
	{".mcp.json", "Claude Code starts the MCP servers it names"},
	{".claude", "Claude Code's project settings: hooks run commands"},
	{".gemini", "Gemini CLI's project settings: hooks and MCP servers"},
	{".codex", "Codex CLI's project configuration"},
	{".opencode", "OpenCode loads the plugins in it"},
	{"opencode.json", "OpenCode's project configuration: MCP servers, plugins"},
	{"opencode.jsonc", "OpenCode's project configuration"},
	{".vscode", "VS Code's tasks, launch configurations and settings"},
	{".idea", "JetBrains IDEs' run configurations"},
}

// HomeProtected are, relative to every home (HomeDirs, and the spec's
// DenyHomes: the gateway's own HOME among them) that a writable root holds
// (the root is the home, or holds it), what programs read commands from
// for whatever the user runs, in any directory: held like Protected, so a
// run serving a home cannot make the user's next git or ssh on the host
// run its program. Not under every root: a project may well make its own
// .config.
var HomeProtected = []Named{
	{".gitconfig", "git runs what the user's global config names (core.fsmonitor, core.pager, aliases, core.hooksPath) in every repository"},
	{".config/git", "git's global config in its XDG place, as .gitconfig"},
	{".ssh", "ssh runs its config's ProxyCommand and LocalCommand (masked when it exists; a missing one cannot be made)"},
	{".config/mitrity", "a gateway that user starts without --config reads its configuration there"},
	{".config/fish", "fish runs its config.fish for every shell"},
	{".config/systemd", "systemd starts the user's units"},
	{".config/autostart", "the desktop session starts its entries at login"},
}

// homeProtected is HomeProtected under each of homes, as absolute paths
// (each home resolved through symlinks as the roots are).
func homeProtected(homes []string) []string {
	var out []string
	for _, h := range homes {
		if real, err := filepath.EvalSymlinks(h); err == nil {
			h = real
		}
		for _, n := range HomeProtected {
			out = append(out, filepath.Join(h, n.Name))
		}
	}
	return out
}

// ProtectedNames are Protected's names.
var ProtectedNames = names(Protected)

func names(ns []Named) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
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
	cands := denyCandidates(homes, extra)
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.path
	}
	return out
}

// candidate is one path of the deny-read set, with what a message may
// call it: a credential store's name is public (every home has the same
// ones), a spec deny path is one of the gateway's own files, whose host
// path an agent never sees.
type candidate struct {
	path  string
	what  string // "a credential store", "one of the gateway's own files", ...
	shown string // the path a message may show; "" for none
}

// Kinds of masked paths, as messages name them.
const (
	whatCredential = "a credential store"
	whatSecrets    = "container secrets"
	whatOwn        = "one of the gateway's own files"
	whatSettings   = "a path the sandbox settings file denies reading"
)

// denyCandidates is DenyCandidates with each path's kind, sorted by path
// and unique; a path named both ways is the gateway's.
func denyCandidates(homes, extra []string) []candidate {
	var out []candidate
	for _, h := range homes {
		for _, n := range CredentialNames {
			p := filepath.Join(h, n)
			out = append(out, candidate{p, whatCredential, p})
		}
	}
	for _, p := range SystemDenyPaths {
		out = append(out, candidate{p, whatSecrets, p})
	}
	for _, p := range extra {
		out = append(out, candidate{path: p, what: whatOwn})
	}
	slices.SortStableFunc(out, func(a, b candidate) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return boolInt(a.shown != "") - boolInt(b.shown != "") // the gateway's first
	})
	return slices.CompactFunc(out, func(a, b candidate) bool { return a.path == b.path })
}

// Mask is one deny-set path that exists on the host, resolved.
type Mask struct {
	Path string // resolved: no symlink left
	Dir  bool
}

// denied is one path of the deny-read set as it exists on the host: the
// mask, the candidates that resolved to it (as written: they may pass
// through symlinks) and what a message may call it.
type denied struct {
	Mask
	named []string
	what  string
	shown string
}

// label is what a message says of d: its kind, and its path when that is
// public.
func (d denied) label() string {
	what := d.what
	if what == whatOwn && d.Dir {
		what = "one of the gateway's own directories"
	}
	if d.shown == "" {
		return what
	}
	return what + " (" + d.shown + ")"
}

// hiddenPrefixes are replaced by fresh mounts inside the sandbox: a host
// path below them is invisible unless a workspace root re-binds it.
var hiddenPrefixes = []string{"/tmp", "/run", "/dev", "/proc"}

// ResolveMasks turns candidates into the masks to mount: each path is
// resolved through symlinks, a path that does not exist is skipped (nothing
// is ever created on the host to mask it), and a path the sandbox cannot see
// anyway (under its fresh /tmp, /run, /dev or /proc, outside every
// workspace root) needs no mask. A path inside a masked directory is hidden
// with it.
func ResolveMasks(candidates, roots []string) []Mask {
	cands := make([]candidate, len(candidates))
	for i, c := range candidates {
		cands[i] = candidate{path: c}
	}
	var out []Mask
	for _, d := range withoutNested(resolveDenied(cands, roots), nil) {
		out = append(out, d.Mask)
	}
	return out
}

// resolveDenied resolves candidates as ResolveMasks does, keeping for each
// mask what named it. A real path named both as the gateway's and as a
// public one is the gateway's.
func resolveDenied(candidates []candidate, roots []string) []denied {
	at := map[string]int{}
	var out []denied
	for _, c := range candidates {
		if _, err := os.Lstat(c.path); err != nil {
			continue // the common case, one system call
		}
		real, err := filepath.EvalSymlinks(c.path)
		if err != nil {
			continue
		}
		if i, ok := at[real]; ok {
			out[i].named = append(out[i].named, c.path)
			if c.shown == "" {
				out[i].what, out[i].shown = c.what, ""
			}
			continue
		}
		st, err := os.Stat(real)
		if err != nil || hiddenInSandbox(real, roots) {
			continue
		}
		at[real] = len(out)
		out = append(out, denied{Mask: Mask{Path: real, Dir: st.IsDir()}, named: []string{c.path}, what: c.what, shown: c.shown})
	}
	return out
}

// withoutNested drops every path inside a masked directory: it is hidden
// with it (a mask of its own would have to be mounted inside the read-only
// cover), except, inside a directory in keep, what is in a workspace root
// the directory holds (keep says which).
func withoutNested(ds []denied, keep func(dir, p string) bool) []denied {
	var out []denied
	for _, m := range ds {
		if !slices.ContainsFunc(ds, func(o denied) bool {
			return o.Dir && o.Path != m.Path && within(o.Path, m.Path) && (keep == nil || !keep(o.Path, m.Path))
		}) {
			out = append(out, m)
		}
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
