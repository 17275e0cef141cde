package config

import (
	"errors"
	"fmt"
	"github.com/mitrity/mitrity/govern"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// validator carries one validation run: each check reads the Config and
// adds a positioned problem for every field it refuses.
type validator struct {
	host
	c    *Config
	doc  *yamlfile.Doc
	errs *yamlfile.Errors
}

// checks run in this order; each reports every problem it finds, so a run
// shows the operator the whole list.
var checks = []func(*validator){
	checkShell,
	checkDefaultCwd,
	checkRunAs,
	checkSandbox,
	checkExecCredentials,
	checkAgentSettable,
	checkEgress,
	checkLimits,
	checkCredentials,
	checkPolicy,
	checkAudit,
	checkThreatIntel,
	checkNotifications,
	checkAdmission,
	checkAdmin,
	checkUpstreams,
	checkAgentLaunch,
}

func (h host) validate(c *Config, errs *yamlfile.Errors) {
	doc := c.doc
	if doc == nil {
		doc = &yamlfile.Doc{File: c.File}
	}
	v := &validator{host: h, c: c, doc: doc, errs: errs}
	for _, check := range checks {
		check(v)
	}
}

// errorf reports a problem with the value at path; keyErrorf with the key.
func (v *validator) errorf(path, format string, args ...any) {
	v.errs.Add(v.doc.Loc(path).Errorf(format, args...))
}

func (v *validator) keyErrorf(path, format string, args ...any) {
	v.errs.Add(v.doc.KeyLoc(path).Errorf(format, args...))
}

// refusedShells have no grammar in the analyzer. Named so the refusal says
// why rather than only what is allowed.
var refusedShells = []string{"zsh", "fish", "pwsh", "powershell", "ksh", "mksh", "csh", "tcsh", "nu", "xonsh", "elvish"}

func checkShell(v *validator) {
	const path = "exec.shell"
	s, on := v.c.Exec.Shell, v.c.Exec.Enabled
	switch {
	case s == "":
		if on {
			v.errorf(path, "required when exec.enabled is true")
		}
		return
	case !filepath.IsAbs(s):
		v.errorf(path, "%q: must be an absolute path", s)
		return
	}
	if base := filepath.Base(s); base != "bash" && base != "sh" {
		if slices.Contains(refusedShells, base) {
			v.errorf(path, "%q: the basename must be bash or sh; %s is refused because the command analyzer has no grammar for it", s, base)
		} else {
			v.errorf(path, "%q: the basename must be bash or sh", s)
		}
		return
	}
	if !on {
		return // a disabled shell need not exist (the distroless image has none)
	}
	fi, err := v.Stat(s)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.errorf(path, "%q: shell not found", s)
	case err != nil:
		v.errorf(path, "%q: %v", s, unwrapPathError(err))
	case !fi.Mode().IsRegular():
		v.errorf(path, "%q: not a regular file", s)
	case fi.Mode().Perm()&0o111 == 0:
		v.errorf(path, "%q: not executable", s)
	}
}

func checkDefaultCwd(v *validator) {
	const path = "exec.default_cwd"
	d, on := v.c.Exec.DefaultCwd, v.c.Exec.Enabled
	switch {
	case d == "":
		if on {
			v.errorf(path, "required when exec.enabled is true: the working directory of a call that names none")
		}
		return
	case !filepath.IsAbs(d):
		v.errorf(path, "%q: must be an absolute path", d)
		return
	case !on:
		return
	}
	fi, err := v.Stat(d)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.errorf(path, "%q: no such directory", d)
	case err != nil:
		v.errorf(path, "%q: %v", d, unwrapPathError(err))
	case !fi.IsDir():
		v.errorf(path, "%q: not a directory", d)
	}
}

// checkRunAs: a gateway running as root never runs an agent's command as
// root, so root must name the user to drop to.
func checkRunAs(v *validator) {
	const path = "exec.run_as"
	name := v.c.Exec.RunAs
	if name == "" {
		if v.c.Exec.Enabled && v.Geteuid() == 0 {
			v.errorf(path, "required when the gateway runs as root: agent commands never run as root")
		}
		return
	}
	u, err := v.LookupUser(name)
	switch {
	case err != nil:
		v.errorf(path, "%q: no such user", name)
	case u.Uid == "0":
		v.errorf(path, "%q: is root (uid 0); name an unprivileged user", name)
	}
}

func checkSandbox(v *validator) {
	s := v.c.Exec.Sandbox
	switch s.Backend {
	case BackendAuto, BackendBubblewrap, BackendSeatbelt, BackendNone:
	default:
		v.errorf("exec.sandbox.backend", "%q: want auto, bubblewrap, seatbelt or none", s.Backend)
	}
	switch s.Seccomp {
	case SeccompRequired, SeccompPreferred, SeccompOff:
	default:
		v.errorf("exec.sandbox.seccomp", "%q: want required, preferred or off", s.Seccomp)
	}
	const path = "exec.sandbox.settings_file"
	switch f := s.SettingsFile; {
	case f == "":
	case !filepath.IsAbs(f):
		v.errorf(path, "%q: must be an absolute path", f)
	case v.c.Exec.Enabled:
		// Missing, the narrowing it promises would silently not happen.
		fi, err := v.Stat(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			v.errorf(path, "%q: no such file", f)
		case err != nil:
			v.errorf(path, "%q: %v", f, unwrapPathError(err))
		case !fi.Mode().IsRegular():
			v.errorf(path, "%q: not a regular file", f)
		}
	}
}

func checkExecCredentials(v *validator) {
	cr := v.c.Exec.Credentials
	for _, name := range sortedKeys(cr.Env) {
		p := yamlfile.Key("exec.credentials.env", name)
		if msg := envNameProblem(name); msg != "" {
			v.keyErrorf(p, "%s", msg)
		}
		v.checkRef(p, cr.Env[name])
	}
	for _, name := range sortedKeys(cr.Files) {
		p := yamlfile.Key("exec.credentials.files", name)
		if !plainFileName(name) {
			v.keyErrorf(p, "want a plain file name (no '/', not '.' or '..'): it is created under $MITRITY_CRED_DIR")
		}
		v.checkRef(p, cr.Files[name])
	}
}

func (v *validator) checkRef(path string, r CredentialRef) {
	id := r.ID()
	switch {
	case id == "":
		v.errorf(path, "%q: want exactly \"${credential:<id>}\"", string(r))
	case !v.defined(id):
		v.errorf(path, "credential %q is not defined under credentials", id)
	}
}

func (v *validator) defined(id string) bool {
	_, ok := v.c.Credentials[id]
	return ok
}

func checkAgentSettable(v *validator) {
	const path = "exec.env.agent_settable"
	seen := map[string]bool{}
	for i, name := range v.c.Exec.Env.AgentSettable {
		p := yamlfile.Index(path, i)
		switch msg := envNameProblem(name); {
		case msg != "":
			v.errorf(p, "%q: %s", name, msg)
		case seen[name]:
			v.errorf(p, "%q: listed twice", name)
		case v.c.Exec.Credentials.Env[name] != "":
			v.errorf(p, "%q: carries a credential (exec.credentials.env); an agent must not replace it", name)
		}
		seen[name] = true
	}
}

// privateRanges are what allowed_private_cidrs may open: the proxy refuses
// them by default, and nothing else it refuses (loopback, link-local,
// metadata) may be reopened from config.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

func checkEgress(v *validator) {
	e := v.c.Exec.Egress
	for i, port := range e.AllowedPorts {
		if port < 1 || port > 65535 {
			v.errorf(yamlfile.Index("exec.egress.allowed_ports", i), "%d: must be between 1 and 65535", port)
		}
	}
	canonical := func(path string, i int, p netip.Prefix) bool {
		switch {
		case !p.IsValid():
			v.errorf(yamlfile.Index(path, i), "not a valid CIDR")
			return false
		case p != p.Masked():
			v.errorf(yamlfile.Index(path, i), "%q: has host bits set; write %s", p, p.Masked())
			return false
		}
		return true
	}
	for i, p := range e.DeniedCIDRs {
		canonical("exec.egress.denied_cidrs", i, p)
	}
	for i, p := range e.AllowedPrivateCIDRs {
		const path = "exec.egress.allowed_private_cidrs"
		if !canonical(path, i, p) {
			continue
		}
		inside := slices.ContainsFunc(privateRanges, func(r netip.Prefix) bool {
			return r.Bits() <= p.Bits() && r.Contains(p.Addr())
		})
		if !inside {
			v.errorf(yamlfile.Index(path, i), "%q: not inside a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7)", p)
		}
	}
}

// bound is one numeric limit; max 0 means unbounded above.
type bound struct {
	path     string
	val      int64
	min, max int64
	bytes    bool
}

func checkLimits(v *validator) {
	l := v.c.Exec.Limits
	const p = "exec.limits."
	for _, b := range []bound{
		{p + "max_timeout_seconds", int64(l.MaxTimeoutSeconds), 1, 3600, false},
		{p + "stdin_max_bytes", l.StdinMaxBytes, 0, 64 * MiB, true},
		{p + "output_max_bytes", l.OutputMaxBytes, 1 * KiB, 64 * MiB, true},
		{p + "max_concurrent", int64(l.MaxConcurrent), 1, 256, false},
		{p + "memory_bytes", l.MemoryBytes, 16 * MiB, 0, true},
		{p + "pids", int64(l.Pids), 8, 65536, false},
		{p + "tmpfs_bytes", l.TmpfsBytes, 1 * MiB, 0, true},
		{p + "file_size_bytes", l.FileSizeBytes, 1 * MiB, 0, true},
	} {
		v.checkBound(b)
	}
}

func (v *validator) checkBound(b bound) {
	show := func(n int64) string {
		if b.bytes && n != 0 {
			return fmt.Sprintf("%d (%s)", n, iec(n))
		}
		return fmt.Sprint(n)
	}
	switch {
	case b.max == 0 && b.val < b.min:
		v.errorf(b.path, "%d: must be at least %s", b.val, show(b.min))
	case b.max != 0 && (b.val < b.min || b.val > b.max):
		v.errorf(b.path, "%d: must be between %s and %s", b.val, show(b.min), show(b.max))
	}
}

// iec prints a power-of-two size as people write it.
func iec(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

func checkCredentials(v *validator) {
	vars := map[string]string{} // injected variable -> id
	for _, id := range sortedKeys(v.c.Credentials) {
		s := v.c.Credentials[id]
		p := yamlfile.Key("credentials", id)
		if !ValidCredentialID(id) {
			v.keyErrorf(p, "a credential id is 1 to 128 letters, digits, '_', '-' or '.'")
		} else if credentialVar(id) == govern.CredentialDirVar {
			v.keyErrorf(p, "becomes $%s, the directory of credential files; rename it", govern.CredentialDirVar)
		} else if other, ok := vars[credentialVar(id)]; ok {
			v.keyErrorf(p, "becomes $%s, as %q does; rename one", credentialVar(id), other)
		} else {
			vars[credentialVar(id)] = id
		}
		var kinds []string
		if s.Env != "" {
			kinds = append(kinds, "env")
		}
		if s.File != "" {
			kinds = append(kinds, "file")
		}
		if s.Command != nil {
			kinds = append(kinds, "command")
		}
		switch len(kinds) {
		case 0:
			v.errorf(p, "want exactly one of env, file or command")
			continue
		case 1:
		default:
			v.errorf(p, "want exactly one of env, file or command, got %s", strings.Join(kinds, " and "))
			continue
		}
		switch {
		case s.Env != "":
			if !validEnvName(s.Env) {
				v.errorf(p+".env", "%q: not a variable name (letters, digits and '_', not starting with a digit)", s.Env)
			}
		case s.File != "":
			if !filepath.IsAbs(s.File) {
				v.errorf(p+".file", "%q: must be an absolute path", s.File)
			}
		default:
			switch {
			case len(s.Command) == 0:
				v.errorf(p+".command", "want the program and its arguments, e.g. [/usr/bin/op, read, op://vault/item/token]")
			case !filepath.IsAbs(s.Command[0]):
				// No shell and no $PATH search: what runs is what is written.
				v.errorf(yamlfile.Index(p+".command", 0), "%q: the program must be an absolute path", s.Command[0])
			}
		}
	}
}

func checkPolicy(v *validator) {
	const path = "policy"
	p := v.c.Policy
	switch {
	case p == "":
	case !filepath.IsAbs(p):
		v.errorf(path, "%q: must be an absolute path", p)
	default:
		fi, err := v.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			v.errorf(path, "%q: no such file", p)
		case err != nil:
			v.errorf(path, "%q: %v", p, unwrapPathError(err))
		case !fi.Mode().IsRegular():
			v.errorf(path, "%q: not a regular file", p)
		}
	}
}

func checkAudit(v *validator) {
	const path = "audit.path"
	switch p := v.c.Audit.Path; {
	case p == "" && v.doc.Has(path):
		v.errorf(path, "must not be empty")
	case p == "":
		v.errorf(path, "required: there is no default when neither $XDG_STATE_HOME nor $HOME is set")
	case !filepath.IsAbs(p):
		v.errorf(path, "%q: must be an absolute path", p)
	}
}

func checkThreatIntel(v *validator) {
	t := v.c.ThreatIntel
	if t.Feed != "" {
		if _, err := os.Stat(t.Feed); err != nil {
			v.errorf("threat_intel.feed", "%q: %v", t.Feed, err)
		}
	}
	if t.ReloadSeconds < 1 || t.ReloadSeconds > 3600 {
		v.errorf("threat_intel.reload_seconds", "%d: want 1 to 3600", t.ReloadSeconds)
	}
}

func checkNotifications(v *validator) {
	w := v.c.Notifications.Webhook
	if w.URL != "" {
		u, err := url.Parse(w.URL)
		switch {
		case err != nil:
			v.errorf("notifications.webhook.url", "not a URL")
		case u.Scheme != "http" && u.Scheme != "https":
			v.errorf("notifications.webhook.url", "want an http or https URL, got scheme %q", u.Scheme)
		case u.Host == "":
			v.errorf("notifications.webhook.url", "the URL has no host")
		}
	}
	if t := w.TimeoutSeconds; t < 1 || t > MaxWebhookTimeout {
		v.errorf("notifications.webhook.timeout_seconds", "%d: must be between 1 and %d", t, MaxWebhookTimeout)
	}
}

// envNameProblem says why name cannot be an injected or agent-set variable,
// or "" when it can. Beyond syntax, it refuses the variables that would undo
// the constructed environment: the gateway's own, what the shell reads at
// startup or imports functions from, the dynamic loader's, PATH and IFS
// (which change what the judged text means), and the proxy variables that
// are the sandbox's only way out.
func envNameProblem(name string) string {
	if !validEnvName(name) {
		return "not a variable name (letters, digits and '_', not starting with a digit)"
	}
	switch {
	case strings.HasPrefix(name, "MITRITY_"):
		return "MITRITY_* variables are the gateway's own"
	case strings.HasPrefix(name, "BASH_FUNC_"):
		return "bash imports shell functions from it"
	case strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "DYLD_"):
		return "the dynamic loader reads it"
	}
	switch name {
	case "BASH_ENV", "ENV":
		return "the shell sources the file it names"
	case "SHELLOPTS", "BASHOPTS":
		return "it turns on shell options"
	case "PS4", "PROMPT_COMMAND":
		return "the shell runs code from it"
	case "PATH", "IFS":
		return "it changes what the judged command means"
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy":
		return "it is the sandbox's route to the egress proxy"
	}
	return ""
}

func validEnvName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func plainFileName(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 255 && !strings.ContainsAny(s, "/\x00")
}

// ValidCredentialID reports whether id can be written in ${credential:<id>}:
// 1 to 128 letters, digits, '_', '-' or '.', the grammar the command
// analyzer rewrites.
func ValidCredentialID(id string) bool { return govern.ValidCredentialID(id) }

func credentialVar(id string) string { return govern.CredentialVar(id) }

// unwrapPathError drops the *PathError's repetition of the path, which the
// message already quotes.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkAdmission: the socket is 0600 in a 0700 directory, so only one
// non-root user can reach it; a root gateway hands both to that user. A
// gateway not running as root can serve only itself.
func checkAdmission(v *validator) {
	a := v.c.Admission
	if p := a.Socket; !filepath.IsAbs(p) {
		v.errorf("admission.socket", "%q: must be an absolute path", p)
	} else if len(p) > 107 {
		v.errorf("admission.socket", "%q: longer than a Unix socket path may be (107 bytes)", p)
	}
	euid := v.Geteuid()
	others := 0
	for i, name := range a.Owners {
		path := yamlfile.Index("admission.owners", i)
		u, err := v.LookupUser(name)
		if err != nil {
			if u, err = lookupUID(v, name); err != nil {
				v.errorf(path, "%q: no such user", name)
				continue
			}
		}
		switch {
		case u.Uid == "0" || u.Uid == fmt.Sprint(euid):
		case euid != 0:
			v.errorf(path, "%q: a gateway that does not run as root serves only its own user; run one gateway per user", name)
		default:
			others++
			if others > 1 {
				v.errorf(path, "%q: the socket is 0600 and belongs to one user; run one gateway per user", name)
			}
			// The socket's directory is handed to that user: it must
			// be one of its own, not the gateway's runtime directory.
			if d := filepath.Dir(a.Socket); others == 1 && (d == govern.RuntimeDir(0, v.Getenv) || !v.doc.Has("admission.socket")) {
				v.errorf(path, "%q: set admission.socket to a path in a directory of its own (it is handed to that user), e.g. /run/mitrity-%s/admission.sock", name, u.Username)
			}
		}
	}
	if t := a.TicketTTLSeconds; t < 1 || t > MaxTicketTTLSeconds {
		v.errorf("admission.ticket_ttl_seconds", "%d: want 1 to %d", t, MaxTicketTTLSeconds)
	}
}

// lookupUID accepts a numeric uid where a user name is expected.
func lookupUID(v *validator, s string) (*user.User, error) {
	if _, err := strconv.ParseUint(s, 10, 32); err != nil {
		return nil, err
	}
	if v.LookupUserID != nil {
		return v.LookupUserID(s)
	}
	return user.LookupId(s)
}

func checkAdmin(v *validator) {
	l := v.c.Admin.Listen
	if l == "" {
		return
	}
	host, port, err := net.SplitHostPort(l)
	if err != nil {
		v.errorf("admin.listen", "%q: want HOST:PORT (e.g. 127.0.0.1:9464)", l)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.errorf("admin.listen", "%q: the port must be 0 to 65535", l)
	}
	if _, err := netip.ParseAddr(host); err != nil && host != "localhost" {
		v.errorf("admin.listen", "%q: the host must be an IP address or localhost", l)
	}
}
