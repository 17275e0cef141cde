package config

import (
	"maps"
	"net/netip"
	"path/filepath"
	"slices"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// The wire structs mirror the file exactly. Every scalar is a pointer and
// every list a pointer to a slice, so "absent" (keep the default) and "zero"
// (the operator wrote 0 or []) stay distinct.

type wireConfig struct {
	Exec          *wireExec                  `yaml:"exec"`
	Credentials   map[string]*wireCredential `yaml:"credentials"`
	Policy        *string                    `yaml:"policy"`
	Audit         *wireAudit                 `yaml:"audit"`
	Notifications *wireNotifications         `yaml:"notifications"`
	ThreatIntel   *wireThreatIntel           `yaml:"threat_intel"`
	Admission     *wireAdmission             `yaml:"admission"`
	Admin         *wireAdmin                 `yaml:"admin"`
	Upstreams     map[string]*wireUpstream   `yaml:"upstreams"`
	AgentLaunch   *wireAgentLaunch           `yaml:"agent_launch"`
}

type wireAdmission struct {
	Enabled          *bool     `yaml:"enabled"`
	Socket           *string   `yaml:"socket"`
	Owners           *[]string `yaml:"owners"`
	TicketTTLSeconds *int      `yaml:"ticket_ttl_seconds"`
}

type wireAdmin struct {
	Listen *string `yaml:"listen"`
}

type wireThreatIntel struct {
	Feed          *string `yaml:"feed"`
	ReloadSeconds *int    `yaml:"reload_seconds"`
}

type wireExec struct {
	Enabled     *bool                `yaml:"enabled"`
	Shell       *string              `yaml:"shell"`
	DefaultCwd  *string              `yaml:"default_cwd"`
	RunAs       *string              `yaml:"run_as"`
	Sandbox     *wireSandbox         `yaml:"sandbox"`
	Credentials *wireExecCredentials `yaml:"credentials"`
	Env         *wireEnv             `yaml:"env"`
	Egress      *wireEgress          `yaml:"egress"`
	Limits      *wireLimits          `yaml:"limits"`
}

type wireSandbox struct {
	Backend      *string `yaml:"backend"`
	Seccomp      *string `yaml:"seccomp"`
	SettingsFile *string `yaml:"settings_file"`
}

type wireExecCredentials struct {
	Env   map[string]string `yaml:"env"`
	Files map[string]string `yaml:"files"`
}

type wireEnv struct {
	AgentSettable *[]string `yaml:"agent_settable"`
}

type wireEgress struct {
	AllowedPorts        *[]int    `yaml:"allowed_ports"`
	DeniedCIDRs         *[]string `yaml:"denied_cidrs"`
	AllowedPrivateCIDRs *[]string `yaml:"allowed_private_cidrs"`
}

type wireLimits struct {
	MaxTimeoutSeconds *int   `yaml:"max_timeout_seconds"`
	StdinMaxBytes     *int64 `yaml:"stdin_max_bytes"`
	OutputMaxBytes    *int64 `yaml:"output_max_bytes"`
	MaxConcurrent     *int   `yaml:"max_concurrent"`
	MemoryBytes       *int64 `yaml:"memory_bytes"`
	Pids              *int   `yaml:"pids"`
	TmpfsBytes        *int64 `yaml:"tmpfs_bytes"`
	FileSizeBytes     *int64 `yaml:"file_size_bytes"`
}

type wireCredential struct {
	Env     *string   `yaml:"env"`
	File    *string   `yaml:"file"`
	Command *[]string `yaml:"command"`
}

type wireAudit struct {
	Path *string `yaml:"path"`
}

type wireNotifications struct {
	Log     *bool        `yaml:"log"`
	Webhook *wireWebhook `yaml:"webhook"`
}

type wireWebhook struct {
	URL            *string `yaml:"url"`
	TimeoutSeconds *int    `yaml:"timeout_seconds"`
}

// defaults is the Config of a file that says nothing. The audit path depends
// on who runs the gateway, so it comes from the host.
func defaults(h host) *Config {
	return &Config{
		Exec: Exec{
			Shell:   DefaultShell,
			Sandbox: Sandbox{Backend: BackendAuto, Seccomp: SeccompRequired},
			Egress:  Egress{AllowedPorts: DefaultAllowedPorts()},
			Limits: Limits{
				MaxTimeoutSeconds: DefaultMaxTimeoutSeconds,
				StdinMaxBytes:     DefaultStdinMaxBytes,
				OutputMaxBytes:    DefaultOutputMaxBytes,
				MaxConcurrent:     DefaultMaxConcurrent,
				MemoryBytes:       DefaultMemoryBytes,
				Pids:              DefaultPids,
				TmpfsBytes:        DefaultTmpfsBytes,
				FileSizeBytes:     DefaultFileSizeBytes,
			},
		},
		Audit:         Audit{Path: h.defaultAuditPath()},
		Notifications: Notifications{Log: true, Webhook: Webhook{TimeoutSeconds: DefaultWebhookTimeout}},
		ThreatIntel:   ThreatIntel{ReloadSeconds: DefaultIntelReloadSeconds},
		Admission: Admission{Enabled: true, Socket: govern.AdmissionSocket(h.Geteuid(), h.Getenv),
			TicketTTLSeconds: DefaultTicketTTLSeconds},
	}
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// overlay writes what the file says over c. Text that must parse (CIDRs) is
// parsed here and reported into errs; every other check is Validate's.
// dir is the config file's directory, against which relative policy and
// audit paths resolve.
func (c *Config) overlay(w *wireConfig, doc *yamlfile.Doc, dir string, errs *yamlfile.Errors) {
	if e := w.Exec; e != nil {
		x := &c.Exec
		set(&x.Enabled, e.Enabled)
		set(&x.Shell, e.Shell)
		set(&x.DefaultCwd, e.DefaultCwd)
		if x.DefaultCwd != "" {
			x.DefaultCwd = filepath.Clean(x.DefaultCwd)
		}
		set(&x.RunAs, e.RunAs)
		if s := e.Sandbox; s != nil {
			if s.Backend != nil {
				x.Sandbox.Backend = Backend(*s.Backend)
			}
			if s.Seccomp != nil {
				x.Sandbox.Seccomp = Seccomp(*s.Seccomp)
			}
			set(&x.Sandbox.SettingsFile, s.SettingsFile)
		}
		if cr := e.Credentials; cr != nil {
			x.Credentials.Env = refs(cr.Env)
			x.Credentials.Files = refs(cr.Files)
		}
		if e.Env != nil && e.Env.AgentSettable != nil {
			x.Env.AgentSettable = slices.Clone(*e.Env.AgentSettable)
		}
		if g := e.Egress; g != nil {
			if g.AllowedPorts != nil {
				x.Egress.AllowedPorts = slices.Clone(*g.AllowedPorts)
			}
			x.Egress.DeniedCIDRs = prefixes(g.DeniedCIDRs, "exec.egress.denied_cidrs", doc, errs)
			x.Egress.AllowedPrivateCIDRs = prefixes(g.AllowedPrivateCIDRs, "exec.egress.allowed_private_cidrs", doc, errs)
		}
		if l := e.Limits; l != nil {
			set(&x.Limits.MaxTimeoutSeconds, l.MaxTimeoutSeconds)
			set(&x.Limits.StdinMaxBytes, l.StdinMaxBytes)
			set(&x.Limits.OutputMaxBytes, l.OutputMaxBytes)
			set(&x.Limits.MaxConcurrent, l.MaxConcurrent)
			set(&x.Limits.MemoryBytes, l.MemoryBytes)
			set(&x.Limits.Pids, l.Pids)
			set(&x.Limits.TmpfsBytes, l.TmpfsBytes)
			set(&x.Limits.FileSizeBytes, l.FileSizeBytes)
		}
	}
	if w.Credentials != nil {
		c.Credentials = make(map[string]CredentialSource, len(w.Credentials))
		for id, wc := range w.Credentials {
			s := CredentialSource{ID: id}
			if wc != nil {
				set(&s.Env, wc.Env)
				set(&s.File, wc.File)
				if wc.Command != nil {
					s.Command = slices.Clone(*wc.Command)
					if s.Command == nil {
						s.Command = []string{} // written, and empty
					}
				}
			}
			c.Credentials[id] = s
		}
	}
	c.Upstreams = upstreams(w.Upstreams, dir)
	c.AgentLaunch.overlay(w.AgentLaunch)
	if w.Policy != nil {
		c.Policy = resolve(dir, *w.Policy)
	}
	if w.Audit != nil && w.Audit.Path != nil {
		c.Audit.Path = resolve(dir, *w.Audit.Path)
	}
	if ti := w.ThreatIntel; ti != nil {
		if ti.Feed != nil {
			c.ThreatIntel.Feed = resolve(dir, *ti.Feed)
		}
		set(&c.ThreatIntel.ReloadSeconds, ti.ReloadSeconds)
	}
	if a := w.Admission; a != nil {
		set(&c.Admission.Enabled, a.Enabled)
		set(&c.Admission.Socket, a.Socket)
		if a.Owners != nil {
			c.Admission.Owners = slices.Clone(*a.Owners)
		}
		set(&c.Admission.TicketTTLSeconds, a.TicketTTLSeconds)
	}
	if a := w.Admin; a != nil {
		set(&c.Admin.Listen, a.Listen)
	}
	if n := w.Notifications; n != nil {
		set(&c.Notifications.Log, n.Log)
		if wh := n.Webhook; wh != nil {
			set(&c.Notifications.Webhook.URL, wh.URL)
			set(&c.Notifications.Webhook.TimeoutSeconds, wh.TimeoutSeconds)
		}
	}
}

func refs(m map[string]string) map[string]CredentialRef {
	if m == nil {
		return nil
	}
	out := make(map[string]CredentialRef, len(m))
	for k, v := range m {
		out[k] = CredentialRef(v)
	}
	return out
}

func prefixes(in *[]string, path string, doc *yamlfile.Doc, errs *yamlfile.Errors) []netip.Prefix {
	if in == nil {
		return nil
	}
	out := make([]netip.Prefix, 0, len(*in))
	for i, s := range *in {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			errs.Add(doc.Loc(yamlfile.Index(path, i)).Errorf("%q: not a CIDR (want address/bits, e.g. 10.0.0.0/8)", s))
			continue
		}
		out = append(out, p)
	}
	return out
}

// resolve makes a relative path absolute against the config file's
// directory, so the file means the same thing whatever the gateway's cwd.
// Empty stays empty.
func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// sortedKeys gives checks a stable order over maps.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
