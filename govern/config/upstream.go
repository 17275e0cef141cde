package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Upstream is one upstream MCP server the gateway proxies (upstreams.<name>):
// either a stdio server it launches (Command) or a Streamable HTTP server it
// connects to (URL).
type Upstream struct {
	// Name is the server's name: its tools are served as <name>__<tool>,
	// with action type mcp:<name>__<tool>.
	Name string
	// Command is a stdio server's argv; Command[0] is absolute or found
	// on the gateway's PATH at boot.
	Command []string
	// Env is the server's environment on top of a constructed base (PATH,
	// HOME, LANG); a value may hold ${credential:<id>} references.
	Env map[string]Template
	// Cwd is a stdio server's working directory, inside one of its
	// writable roots (default: the first of them, else an empty private
	// directory made for each start).
	Cwd string
	// URL is a Streamable HTTP server's endpoint.
	URL string
	// Headers are sent with every request to URL; a value may hold
	// ${credential:<id>} references.
	Headers map[string]Template
	TLS     UpstreamTLS
	// Sandbox is how a stdio server is isolated: "sandbox" (the default,
	// the governed shell's kernel sandbox) or "none" (stamped and notified
	// like a degraded shell).
	Sandbox UpstreamSandbox
	// WritableRoots are the only host paths the sandboxed server may write.
	WritableRoots []string
	// Egress is the server's own destination allowlist (the egress
	// proxy's entry grammar); empty: no network at all.
	Egress []string
	// CallTimeoutSeconds bounds one tools/call (and resources/read,
	// prompts/get); the call is cancelled upstream when it passes.
	CallTimeoutSeconds int
	// ResultMaxBytes caps what one result may carry back; more is cut
	// with a truncation marker.
	ResultMaxBytes int64
	// AllowSampling, AllowElicitation: the upstream's requests of that
	// kind are passed on to the agent whose call is in flight (refused
	// otherwise); audited either way.
	AllowSampling    bool
	AllowElicitation bool
}

// UpstreamTLS are the TLS settings of an HTTP upstream.
type UpstreamTLS struct {
	// CAFile is a PEM bundle that replaces the system roots.
	CAFile string
	// ServerName overrides the name the certificate must carry.
	ServerName string
}

// UpstreamSandbox is upstreams.<name>.sandbox.
type UpstreamSandbox string

const (
	UpstreamSandboxed   UpstreamSandbox = "sandbox"
	UpstreamUnsandboxed UpstreamSandbox = "none"
)

// Stdio reports whether the upstream is a server the gateway launches.
func (u Upstream) Stdio() bool { return len(u.Command) > 0 }

// CredentialIDs are the credentials the upstream's env and headers use,
// sorted, each once.
func (u Upstream) CredentialIDs() []string {
	var ids []string
	for _, t := range u.Env {
		ids = append(ids, t.IDs()...)
	}
	for _, t := range u.Headers {
		ids = append(ids, t.IDs()...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Defaults of an upstream entry.
const (
	DefaultUpstreamCallTimeoutSeconds       = 60
	DefaultUpstreamResultMaxBytes     int64 = 1 << 20
	// MaxUpstreamNameBytes keeps <name>__<tool> within the 64 characters
	// model APIs accept for a tool name, with room for the tool.
	MaxUpstreamNameBytes = 32
)

// Template is a text that may hold ${credential:<id>} references, expanded
// when the upstream starts (env) or connects (headers).
type Template string

var credentialRefRE = regexp.MustCompile(`\$\{credential:([^}]*)\}`)

// IDs are the credential ids the template names, in order.
func (t Template) IDs() []string {
	var ids []string
	for _, m := range credentialRefRE.FindAllStringSubmatch(string(t), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// Expand replaces every reference with its value from values; a missing
// one is an error naming the id.
func (t Template) Expand(values map[string]string) (string, error) {
	var missing string
	out := credentialRefRE.ReplaceAllStringFunc(string(t), func(ref string) string {
		id := credentialRefRE.FindStringSubmatch(ref)[1]
		v, ok := values[id]
		if !ok && missing == "" {
			missing = id
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("credential %s was not fetched", missing)
	}
	return out, nil
}

type wireUpstream struct {
	Command            *[]string          `yaml:"command"`
	Env                map[string]string  `yaml:"env"`
	Cwd                *string            `yaml:"cwd"`
	URL                *string            `yaml:"url"`
	Headers            map[string]string  `yaml:"headers"`
	TLS                *wireUpstreamTLS   `yaml:"tls"`
	Sandbox            *string            `yaml:"sandbox"`
	WritableRoots      *[]string          `yaml:"writable_roots"`
	Egress             *[]string          `yaml:"egress"`
	CallTimeoutSeconds *int               `yaml:"call_timeout_seconds"`
	ResultMaxBytes     *int64             `yaml:"result_max_bytes"`
	Allow              *wireUpstreamAllow `yaml:"allow_requests"`
}

type wireUpstreamTLS struct {
	CAFile     *string `yaml:"ca_file"`
	ServerName *string `yaml:"server_name"`
}

type wireUpstreamAllow struct {
	Sampling    *bool `yaml:"sampling"`
	Elicitation *bool `yaml:"elicitation"`
}

// NewUpstream is an upstream entry named name with every default: the
// sidecar's, when the config names none.
func NewUpstream(name string) Upstream {
	return Upstream{Name: name, Sandbox: UpstreamSandboxed,
		CallTimeoutSeconds: DefaultUpstreamCallTimeoutSeconds, ResultMaxBytes: DefaultUpstreamResultMaxBytes}
}

// upstreams builds the upstreams block; relative paths resolve against
// the config file's directory.
func upstreams(w map[string]*wireUpstream, dir string) map[string]Upstream {
	if w == nil {
		return nil
	}
	out := make(map[string]Upstream, len(w))
	for name, wu := range w {
		u := NewUpstream(name)
		if wu != nil {
			if wu.Command != nil {
				u.Command = slices.Clone(*wu.Command)
				if u.Command == nil {
					u.Command = []string{}
				}
			}
			u.Env = templates(wu.Env)
			if wu.Cwd != nil {
				u.Cwd = resolve(dir, *wu.Cwd)
			}
			set(&u.URL, wu.URL)
			u.Headers = templates(wu.Headers)
			if t := wu.TLS; t != nil {
				if t.CAFile != nil {
					u.TLS.CAFile = resolve(dir, *t.CAFile)
				}
				set(&u.TLS.ServerName, t.ServerName)
			}
			if wu.Sandbox != nil {
				u.Sandbox = UpstreamSandbox(*wu.Sandbox)
			}
			if wu.WritableRoots != nil {
				for _, r := range *wu.WritableRoots {
					u.WritableRoots = append(u.WritableRoots, resolve(dir, r))
				}
			}
			if wu.Egress != nil {
				u.Egress = slices.Clone(*wu.Egress)
			}
			set(&u.CallTimeoutSeconds, wu.CallTimeoutSeconds)
			set(&u.ResultMaxBytes, wu.ResultMaxBytes)
			if a := wu.Allow; a != nil {
				set(&u.AllowSampling, a.Sampling)
				set(&u.AllowElicitation, a.Elicitation)
			}
		}
		out[name] = u
	}
	return out
}

func templates(m map[string]string) map[string]Template {
	if m == nil {
		return nil
	}
	out := make(map[string]Template, len(m))
	for k, v := range m {
		out[k] = Template(v)
	}
	return out
}

var upstreamNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// headerNameRE is an HTTP token (RFC 9110).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func checkUpstreams(v *validator) {
	for _, name := range sortedKeys(v.c.Upstreams) {
		u := v.c.Upstreams[name]
		p := yamlfile.Key("upstreams", name)
		switch {
		// "__" first: the grammar below refuses every '_', so after it
		// this sentence, the one that says why, could never be shown.
		case strings.Contains(name, "__"):
			v.keyErrorf(p, "an upstream name must not hold \"__\": it separates the server from the tool in <name>__<tool>")
		case !upstreamNameRE.MatchString(name) || len(name) > MaxUpstreamNameBytes:
			v.keyErrorf(p, "an upstream name is 1 to %d letters, digits and '-', starting with a letter or digit: its tools are served as <name>__<tool>", MaxUpstreamNameBytes)
		case name == "shell":
			v.keyErrorf(p, "%q is the governed shell's own name (shell__execute)", name)
		}
		switch {
		case u.Command != nil && u.URL != "":
			v.errorf(p, "want exactly one of command (a stdio server) or url (a Streamable HTTP server), got both")
			continue
		case u.Command == nil && u.URL == "":
			v.errorf(p, "want exactly one of command (a stdio server) or url (a Streamable HTTP server)")
			continue
		}
		if u.Command != nil {
			checkStdioUpstream(v, p, u)
		} else {
			checkHTTPUpstream(v, p, u)
		}
		for _, k := range sortedKeys(u.Env) {
			kp := yamlfile.Key(p+".env", k)
			if msg := envNameProblem(k); msg != "" {
				v.keyErrorf(kp, "%s", msg)
			}
			v.checkTemplate(kp, u.Env[k])
			if t := u.Env[k]; len(t.IDs()) > 0 && CredentialRef(t).ID() == "" {
				v.errorf(kp, "an env value is either plain text or exactly one ${credential:<id>} reference")
			}
		}
		if u.CallTimeoutSeconds < 1 {
			v.errorf(p+".call_timeout_seconds", "%d: must be at least 1", u.CallTimeoutSeconds)
		}
		if u.ResultMaxBytes < 1024 {
			v.errorf(p+".result_max_bytes", "%d: must be at least 1024", u.ResultMaxBytes)
		}
		for i, e := range u.Egress {
			if _, err := egress.ParseEntry(e); err != nil {
				v.errorf(yamlfile.Index(p+".egress", i), "%v", err) // the error quotes the entry, as the policy's destinations show it
			}
		}
	}
}

func checkStdioUpstream(v *validator, p string, u Upstream) {
	if len(u.Command) == 0 {
		v.errorf(p+".command", "empty: want the server's argv, e.g. [npx, -y, @modelcontextprotocol/server-filesystem, /srv/data]")
	} else if c := u.Command[0]; c == "" {
		v.errorf(yamlfile.Index(p+".command", 0), "empty program name")
	} else if strings.ContainsRune(c, '/') && !filepath.IsAbs(c) {
		v.errorf(yamlfile.Index(p+".command", 0), "%q: a program path must be absolute (or a bare name found on PATH)", c)
	}
	for i, a := range u.Command {
		if strings.IndexByte(a, 0) >= 0 {
			v.errorf(yamlfile.Index(p+".command", i), "holds a NUL byte")
		}
		if len(Template(a).IDs()) > 0 {
			v.errorf(yamlfile.Index(p+".command", i), "a credential never goes on a command line: pass it through env")
		}
	}
	if len(u.Headers) > 0 || u.TLS != (UpstreamTLS{}) {
		v.errorf(p, "headers and tls are for a url upstream, not a command")
	}
	switch u.Sandbox {
	case UpstreamSandboxed, UpstreamUnsandboxed:
	default:
		v.errorf(p+".sandbox", "%q: want sandbox (the kernel sandbox, the default) or none", string(u.Sandbox))
	}
	if u.Cwd != "" {
		inRoot := false
		for _, r := range u.WritableRoots {
			if rel, err := filepath.Rel(r, u.Cwd); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				inRoot = true
			}
		}
		fi, err := v.Stat(u.Cwd)
		switch {
		case err != nil:
			v.errorf(p+".cwd", "%q: %v", u.Cwd, unwrapPathError(err))
		case !fi.IsDir():
			v.errorf(p+".cwd", "%q: not a directory", u.Cwd)
		case !inRoot && u.Sandbox != UpstreamUnsandboxed:
			// The sandbox starts a server only inside a root it can write.
			v.errorf(p+".cwd", "%q is inside none of writable_roots: a sandboxed server starts in one of them", u.Cwd)
		}
	}
	for i, r := range u.WritableRoots {
		ip := yamlfile.Index(p+".writable_roots", i)
		fi, err := v.Stat(r) // the loader's host, like every other path it checks
		switch {
		case err != nil:
			v.errorf(ip, "%q: %v", r, unwrapPathError(err))
		case !fi.IsDir():
			v.errorf(ip, "%q: not a directory", r)
		}
	}
}

func checkHTTPUpstream(v *validator, p string, u Upstream) {
	pu, err := url.Parse(u.URL)
	switch {
	case err != nil:
		v.errorf(p+".url", "%q: %v", u.URL, err)
	case pu.Scheme != "https" && pu.Scheme != "http":
		v.errorf(p+".url", "%q: want an http or https URL", u.URL)
	case pu.Host == "":
		v.errorf(p+".url", "%q: no host", u.URL)
	case pu.User != nil:
		v.errorf(p+".url", "credentials do not belong in the URL: put them in headers as ${credential:<id>}")
	case len(Template(u.URL).IDs()) > 0:
		v.errorf(p+".url", "a credential never goes in the URL: put it in headers")
	}
	if len(u.Env) > 0 || u.Cwd != "" || len(u.WritableRoots) > 0 || len(u.Egress) > 0 || u.Sandbox != UpstreamSandboxed {
		v.errorf(p, "env, cwd, sandbox, writable_roots and egress are for a command upstream: the gateway does not run a url upstream")
	}
	for _, k := range sortedKeys(u.Headers) {
		kp := yamlfile.Key(p+".headers", k)
		if !headerNameRE.MatchString(k) {
			v.keyErrorf(kp, "not an HTTP header name")
		}
		if strings.ContainsAny(string(u.Headers[k]), "\r\n") {
			v.errorf(kp, "a header value must not hold a line break")
		}
		v.checkTemplate(kp, u.Headers[k])
	}
	if pu != nil && pu.Scheme == "http" {
		// The operator who set these expects a checked certificate; over
		// http there is none, and headers (credentials) go in clear.
		if u.TLS.CAFile != "" {
			v.errorf(p+".tls.ca_file", "tls is for an https url; %q is http, so nothing is encrypted and no certificate is checked", u.URL)
		}
		if u.TLS.ServerName != "" {
			v.errorf(p+".tls.server_name", "tls is for an https url; %q is http, so nothing is encrypted and no certificate is checked", u.URL)
		}
	}
	if f := u.TLS.CAFile; f != "" {
		if _, err := v.Stat(f); err != nil {
			v.errorf(p+".tls.ca_file", "%q: %v", f, unwrapPathError(err))
		}
	}
}

func (v *validator) checkTemplate(path string, t Template) {
	for _, id := range t.IDs() {
		switch {
		case !ValidCredentialID(id):
			v.errorf(path, "${credential:%s}: not a credential id", id)
		case !v.defined(id):
			v.errorf(path, "credential %q is not defined under credentials", id)
		}
	}
}
