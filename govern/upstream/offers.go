package upstream

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/inject"
)

// An upstream's resources and prompts are served under the same
// permission model as its tools: a resource read is judged as action type
// mcp:<server>__resource:<uri>, a prompt as mcp:<server>__prompt:<name>,
// so a pattern such as mcp:github__* covers a server's tools, resources
// and prompts at once. A resource keeps its URI (a URI two servers both
// offer is refused for the second, never renamed); a prompt is served as
// <server>__<name>.

// ResourceAction is the action type of reading uri from server.
func ResourceAction(server, uri string) string {
	return govern.ActionMCPPrefix + server + Separator + "resource:" + uri
}

// PromptAction is the action type of getting server's prompt name.
func PromptAction(server, name string) string {
	return govern.ActionMCPPrefix + server + Separator + "prompt:" + name
}

// Resource is a served resource or resource template of an upstream.
type Resource struct {
	Server   string
	Def      *mcp.Resource         // nil for a template
	Template *mcp.ResourceTemplate // nil for a resource
}

// Key is the URI (or URI template) the resource is served under.
func (r Resource) Key() string {
	if r.Template != nil {
		return r.Template.URITemplate
	}
	return r.Def.URI
}

// Prompt is a served prompt of an upstream.
type Prompt struct {
	Served, Server, Name string
	Def                  *mcp.Prompt
}

// Offers are the resources and prompts every upstream serves now. It is
// safe for concurrent use.
type Offers struct {
	mu        sync.Mutex
	resources map[string][]Resource // by server
	prompts   map[string][]Prompt   // by server
}

// NewOffers returns empty offers.
func NewOffers() *Offers {
	return &Offers{resources: map[string][]Resource{}, prompts: map[string][]Prompt{}}
}

// JudgeResources takes server's resources and templates (nil: it went
// down or has none) and returns a judgement for each it refuses: a URI
// another server already serves, a description that reads as a prompt
// injection.
func (o *Offers) JudgeResources(server string, rs []*mcp.Resource, ts []*mcp.ResourceTemplate) []Judgement {
	o.mu.Lock()
	defer o.mu.Unlock()
	taken := map[string]bool{}
	for s, list := range o.resources {
		if s != server {
			for _, r := range list {
				taken[r.Key()] = true
			}
		}
	}
	var out []Resource
	var js []Judgement
	judge := func(r Resource, text string) {
		key := r.Key()
		j := Judgement{Server: server, Tool: key, Served: key, SHA256: hashOf(r)}
		problem := ""
		switch {
		case len(key) > MaxURIBytes:
			problem = fmt.Sprintf("the URI is %d bytes; at most %d are read", len(key), MaxURIBytes)
		case r.Def != nil:
			// A listed resource is read by exactly its URI: one that
			// would be refused is not listed.
			problem = CheckURI(key)
		}
		switch {
		case key == "" || taken[key]:
			j.State, j.Reason, j.Message = audit.DefinitionRefused, govern.ReasonToolNameInvalid,
				fmt.Sprintf("resource %q of %s is empty or already served by another upstream; it is not served", cut(key, 256), server)
		case problem != "":
			j.State, j.Reason, j.Message = audit.DefinitionRefused, govern.ReasonToolNameInvalid,
				fmt.Sprintf("resource %q of %s cannot be read through the gateway (%s); it is not served", cut(key, 256), server, problem)
		default:
			if f := inject.Scan(text); len(f) > 0 {
				j.State, j.Reason = audit.DefinitionWithheld, govern.ReasonToolDescriptionInjection
				j.Message = fmt.Sprintf("the description of resource %s of %s reads as a prompt injection (%s: %s); it is withheld", key, server, f[0].Kind, f[0].Detail)
			}
		}
		if j.State != "" {
			js = append(js, j)
			return
		}
		taken[key] = true
		out = append(out, r)
	}
	for _, r := range rs {
		if r != nil {
			judge(Resource{Server: server, Def: r}, r.Name+"\n"+r.Title+"\n"+r.Description)
		}
	}
	for _, t := range ts {
		if t != nil {
			judge(Resource{Server: server, Template: t}, t.Name+"\n"+t.Title+"\n"+t.Description)
		}
	}
	if out == nil {
		delete(o.resources, server)
	} else {
		o.resources[server] = out
	}
	return js
}

// JudgePrompts takes server's prompts (nil: down or none) and returns a
// judgement for each it refuses.
func (o *Offers) JudgePrompts(server string, ps []*mcp.Prompt) []Judgement {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Prompt
	var js []Judgement
	seen := map[string]bool{}
	for _, p := range ps {
		if p == nil {
			continue
		}
		served, err := ServedName(server, p.Name)
		j := Judgement{Server: server, Tool: p.Name, Served: served, SHA256: hashOf(p)}
		var text strings.Builder
		text.WriteString(p.Title + "\n" + p.Description)
		for _, a := range p.Arguments {
			if a != nil {
				text.WriteString("\n" + a.Description)
			}
		}
		switch {
		case err != nil:
			j.Served, j.State, j.Reason, j.Message = "", audit.DefinitionRefused, govern.ReasonToolNameInvalid, "prompt "+err.Error()
		case seen[served]:
			j.State, j.Reason, j.Message = audit.DefinitionRefused, govern.ReasonToolNameInvalid, "prompt "+served+" is listed twice"
		default:
			if f := inject.Scan(text.String()); len(f) > 0 {
				j.State, j.Reason = audit.DefinitionWithheld, govern.ReasonToolDescriptionInjection
				j.Message = fmt.Sprintf("the description of prompt %s reads as a prompt injection (%s: %s); it is withheld", served, f[0].Kind, f[0].Detail)
			}
		}
		if j.State != "" {
			js = append(js, j)
			continue
		}
		seen[served] = true
		def := *p
		def.Name = served
		out = append(out, Prompt{Served: served, Server: server, Name: p.Name, Def: &def})
	}
	if out == nil {
		delete(o.prompts, server)
	} else {
		o.prompts[server] = out
	}
	return js
}

// Resources are every served resource and template, by server then key.
func (o *Offers) Resources() []Resource {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Resource
	for _, s := range slices.Sorted(maps.Keys(o.resources)) {
		out = append(out, o.resources[s]...)
	}
	return out
}

// Owners are the servers that serve uri, sorted: each whose resource has
// that URI or one of whose templates matches it, matched as the SDK routes
// a read (github.com/yosida95/uritemplate, the SDK's matcher). A URI two
// servers serve is read from the one whose resource or template the SDK
// finds first, which the agent cannot see and a server can arrange (a
// narrower template sorts first): the read is refused instead.
func (o *Offers) Owners(uri string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, server := range slices.Sorted(maps.Keys(o.resources)) {
		for _, r := range o.resources[server] {
			if r.matches(uri) {
				out = append(out, server)
				break
			}
		}
	}
	return out
}

func (r Resource) matches(uri string) bool {
	if r.Template == nil {
		return r.Def != nil && r.Def.URI == uri
	}
	t, err := uritemplate.New(r.Template.URITemplate)
	return err == nil && t.Regexp().MatchString(uri)
}

// Prompts are every served prompt, by server.
func (o *Offers) Prompts() []Prompt {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Prompt
	for _, s := range slices.Sorted(maps.Keys(o.prompts)) {
		out = append(out, o.prompts[s]...)
	}
	return out
}

// Prompt is the served prompt of that name.
func (o *Offers) Prompt(served string) (Prompt, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ps := range o.prompts {
		for _, p := range ps {
			if p.Served == served {
				return p, true
			}
		}
	}
	return Prompt{}, false
}

// cut is at most n bytes of v (on a UTF-8 boundary), marked when cut: what
// a message quotes of a name the upstream chose.
func cut(v string, n int) string {
	if len(v) <= n {
		return v
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n] + "…"
}

// hashOf is the hash of a definition as JSON.
func hashOf(v any) string {
	b, _ := jsonMarshal(v)
	return audit.HashOf(b)
}

// jsonMarshal is json.Marshal of the canonical form (sorted keys).
func jsonMarshal(v any) ([]byte, error) { return json.Marshal(canonical(v)) }
