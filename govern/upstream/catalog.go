// Package upstream is the gateway's side of the upstream MCP servers it
// proxies: one connection per server (a stdio server it launches through
// a Dialer, or a Streamable HTTP server), kept up with restarts, and the
// catalog that judges each tool definition the server lists — its served
// name, its hash against the one first seen or pinned, its description
// against the injection scanner — before an agent may see it.
//
// Deciding a call is the pipeline's; running it here is a forward over the
// MCP Go SDK's client; what comes back is redacted and scanned by Result.
package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/inject"
)

// Separator joins the server and the tool in a served name.
const Separator = "__"

// MaxServedName is the longest tool name model APIs accept.
const MaxServedName = 64

var servedNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ServedName is the name an agent calls server's tool by, and an error
// (a sentence) when that name could not be called from a model API.
func ServedName(server, tool string) (string, error) {
	n := server + Separator + tool
	switch {
	case tool == "":
		return "", fmt.Errorf("upstream %s lists a tool with no name", server)
	case len(n) > MaxServedName:
		return "", fmt.Errorf("%s is %d characters; model APIs accept at most %d", cut(n, 128), len(n), MaxServedName)
	case !servedNameRE.MatchString(n):
		return "", fmt.Errorf("%q holds characters a model API refuses in a tool name (letters, digits, '_' and '-' only)", cut(n, 128))
	}
	return n, nil
}

// ActionType is the action type of a served tool: mcp:<server>__<tool>.
func ActionType(served string) string { return govern.ActionMCPPrefix + served }

// Hash is the hex SHA-256 of what a tool's definition says to a model and
// a client: name, title, description, input and output schema,
// annotations. Schemas are hashed in canonical form (keys sorted), so a
// server that re-serialises the same schema differently keeps its hash.
func Hash(t *mcp.Tool) string {
	def := map[string]any{
		"name":         t.Name,
		"title":        t.Title,
		"description":  t.Description,
		"inputSchema":  canonical(t.InputSchema),
		"outputSchema": canonical(t.OutputSchema),
		"annotations":  canonical(t.Annotations),
	}
	b, _ := json.Marshal(def) // maps marshal with sorted keys
	return audit.HashOf(b)
}

// canonical is v as plain JSON values (maps, whose keys json sorts).
func canonical(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || bytes.Equal(b, []byte("null")) {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return string(b)
	}
	return out
}

// Tool is a tool the catalog serves.
type Tool struct {
	Served string
	Server string
	// Name is the tool's name at the upstream.
	Name string
	// Def is the upstream's definition, under the served name.
	Def    *mcp.Tool
	SHA256 string
}

// Judgement is one definition's fate in a listing, for the audit log.
type Judgement struct {
	Server, Tool, Served string
	SHA256, Previous     string
	State                string
	Reason               govern.Reason
	Message              string
}

// Catalog judges the tool definitions of every upstream. It is safe for
// concurrent use.
type Catalog struct {
	mu sync.Mutex
	// seen is the definition hash each served name was first seen (or
	// approved) with; pins are the policy's, which win.
	seen map[string]string
	pins map[string]string
	// tools are what each server serves now; withheld what it lists
	// that is withheld (served name -> the tool and why), so that a call
	// of one is refused with its reason rather than as unknown.
	tools    map[string][]Tool
	withheld map[string]map[string]Withheld
	// store keeps seen across runs of the gateway; nil: memory only.
	store *SeenFile
}

// Withheld is a listed tool the catalog does not serve, and why.
type Withheld struct {
	Tool
	Judgement
}

// NewCatalog returns a catalog with the policy's pins (served name ->
// hex SHA-256).
func NewCatalog(pins map[string]string) *Catalog {
	return &Catalog{seen: map[string]string{}, pins: maps.Clone(pins), tools: map[string][]Tool{}, withheld: map[string]map[string]Withheld{}}
}

// SetStore makes the catalog keep first-seen and approved hashes in f,
// across runs of the gateway, and read those already there.
// A file it cannot read is an error, and stays the store: every
// definition not seen before is then withheld (audit_unavailable), never
// trusted for want of a record.
func (c *Catalog) SetStore(f SeenFile) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store = &f
	return c.refresh()
}

// refresh reads what the store holds now (another gateway may have
// recorded or approved a definition since); the file wins. Under mu.
func (c *Catalog) refresh() error {
	if c.store == nil {
		return nil
	}
	m, err := c.store.Load()
	if err != nil {
		return err
	}
	for k, v := range m {
		c.seen[k] = v
	}
	return nil
}

// SetPins replaces the policy's pins (a reload).
func (c *Catalog) SetPins(pins map[string]string) {
	c.mu.Lock()
	c.pins = maps.Clone(pins)
	c.mu.Unlock()
}

// Judge takes server's listing and returns what it serves now, with a
// judgement for every definition that is new, changed, withheld or
// refused (a tool served as before has none). taken reports whether a
// served name already belongs to something else (shell__execute, another
// server's tool).
func (c *Catalog) Judge(server string, listed []*mcp.Tool, taken func(served string) bool) ([]Tool, []Judgement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Tool
	var js []Judgement
	held := map[string]Withheld{}
	_ = c.refresh() // a store it cannot read fails First below, which withholds
	hold := func(t *mcp.Tool, j Judgement) {
		def := *t
		def.Name = j.Served
		held[j.Served] = Withheld{Tool: Tool{Served: j.Served, Server: server, Name: t.Name, Def: &def, SHA256: j.SHA256}, Judgement: j}
	}
	// A name listed twice is refused every time it is listed, the first
	// included: which of the two definitions the upstream runs is not the
	// gateway's to know, so serving either would vouch for a definition
	// the calls may not reach (and the audit log would say "refused" of
	// a name the agent is served).
	count := map[string]int{}
	for _, t := range listed {
		if t != nil {
			count[t.Name]++
		}
	}
	for _, t := range listed {
		if t == nil {
			continue
		}
		h := Hash(t)
		served, err := ServedName(server, t.Name)
		j := Judgement{Server: server, Tool: t.Name, Served: served, SHA256: h}
		switch {
		case err != nil:
			j.Served, j.State, j.Reason, j.Message = "", audit.DefinitionRefused, govern.ReasonToolNameInvalid, err.Error()
			js = append(js, j)
			continue
		case count[t.Name] > 1 || taken(served):
			j.State, j.Reason, j.Message = audit.DefinitionRefused, govern.ReasonToolNameInvalid,
				fmt.Sprintf("%s is listed twice or collides with a tool the gateway already serves; neither is renamed", served)
			js = append(js, j)
			continue
		}
		if msg := schemaProblem(t); msg != "" {
			j.State, j.Reason, j.Message = audit.DefinitionRefused, govern.ReasonToolDefinitionInvalid, served+": "+msg
			js = append(js, j)
			continue
		}
		if where, f := poisoned(t); len(f) > 0 {
			j.State, j.Reason = audit.DefinitionWithheld, govern.ReasonToolDescriptionInjection
			j.Message = fmt.Sprintf("the %s of %s reads as a prompt injection (%s: %s); the tool is withheld", where, served, f[0].Kind, f[0].Detail)
			js = append(js, j)
			hold(t, j)
			continue
		}
		want, pinned := c.pins[served]
		first, seen := c.seen[served]
		switch {
		case pinned && want != h:
			j.State, j.Reason, j.Previous = audit.DefinitionWithheld, govern.ReasonToolDefinitionChanged, want
			j.Message = fmt.Sprintf("the definition of %s is not the one the policy pins (tool_pins); the tool is withheld", served)
			js = append(js, j)
			hold(t, j)
			continue
		case pinned:
			if !seen {
				c.seen[served] = h
				j.State = audit.DefinitionPinned
				js = append(js, j)
			}
		case !seen && c.store != nil:
			// Another gateway sharing the file may have seen it first.
			stored, err := c.store.First(served, h)
			switch {
			case err != nil:
				j.State, j.Reason = audit.DefinitionWithheld, govern.ReasonAuditUnavailable
				j.Message = fmt.Sprintf("the first definition of %s could not be recorded (%v), so a later change could not be told: it is withheld", served, err)
				js = append(js, j)
				hold(t, j)
				continue
			case stored != h:
				c.seen[served] = stored
				j.State, j.Reason, j.Previous = audit.DefinitionWithheld, govern.ReasonToolDefinitionChanged, stored
				j.Message = fmt.Sprintf("the definition of %s changed since it was first seen; it is withheld until an operator approves the new one (mitrity-gateway approvals)", served)
				js = append(js, j)
				hold(t, j)
				continue
			}
			c.seen[served] = h
			j.State = audit.DefinitionFirstSeen
			js = append(js, j)
		case !seen:
			c.seen[served] = h
			j.State = audit.DefinitionFirstSeen
			js = append(js, j)
		case first != h:
			j.State, j.Reason, j.Previous = audit.DefinitionWithheld, govern.ReasonToolDefinitionChanged, first
			j.Message = fmt.Sprintf("the definition of %s changed since it was first seen; it is withheld until an operator approves the new one (mitrity-gateway approvals)", served)
			js = append(js, j)
			hold(t, j)
			continue
		}
		def := *t
		def.Name = served
		out = append(out, Tool{Served: served, Server: server, Name: t.Name, Def: &def, SHA256: h})
	}
	slices.SortFunc(out, func(a, b Tool) int {
		if a.Served < b.Served {
			return -1
		}
		if a.Served > b.Served {
			return 1
		}
		return 0
	})
	c.tools[server] = out
	c.withheld[server] = held
	return out, js
}

// Withheld are the listed tools the catalog withholds now, by served
// name.
func (c *Catalog) Withheld() []Withheld {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Withheld
	for _, s := range slices.Sorted(maps.Keys(c.withheld)) {
		for _, n := range slices.Sorted(maps.Keys(c.withheld[s])) {
			out = append(out, c.withheld[s][n])
		}
	}
	return out
}

// WithheldTool is the withheld tool of that name, and why.
func (c *Catalog) WithheldTool(served string) (Withheld, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ts := range c.withheld {
		if w, ok := ts[served]; ok {
			return w, true
		}
	}
	return Withheld{}, false
}

// Approve makes sha the accepted definition of served (an operator
// approved it); the next Judge serves it.
func (c *Catalog) Approve(served, sha string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != nil {
		if err := c.store.Set(served, sha); err != nil {
			return err
		}
	}
	c.seen[served] = sha
	return nil
}

// Drop forgets what server serves (it went down); what was first seen
// stays remembered.
func (c *Catalog) Drop(server string) {
	c.mu.Lock()
	delete(c.tools, server)
	delete(c.withheld, server)
	c.mu.Unlock()
}

// Lookup is the served tool of that name, if a server serves it now.
func (c *Catalog) Lookup(served string) (Tool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ts := range c.tools {
		for _, t := range ts {
			if t.Served == served {
				return t, true
			}
		}
	}
	return Tool{}, false
}

// Tools is every served tool, sorted by served name.
func (c *Catalog) Tools() []Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Tool
	for _, s := range slices.Sorted(maps.Keys(c.tools)) {
		out = append(out, c.tools[s]...)
	}
	return out
}

// poisoned scans what a definition tells a model for prompt injection:
// the description and titles, and every string of the input and output
// schemas (a parameter's description, an enum value, a default reach the
// model as surely as the tool's description; tool poisoning hides there
// as often). It returns where the first finding is, and the findings.
func poisoned(t *mcp.Tool) (string, []inject.Finding) {
	head := t.Description + "\n" + t.Title
	if t.Annotations != nil {
		head += "\n" + t.Annotations.Title
	}
	if f := inject.Scan(head); len(f) > 0 {
		return "description", f
	}
	for _, s := range []struct {
		where  string
		schema any
	}{{"input schema", t.InputSchema}, {"output schema", t.OutputSchema}} {
		var f []inject.Finding
		walk(canonical(s.schema), "", func(v, _ string) string {
			if len(f) == 0 {
				f = inject.Scan(v)
			}
			return v
		})
		if len(f) > 0 {
			return s.where, f
		}
	}
	return "", nil
}

// schemaProblem is why a definition cannot be served as it is, or "": the
// input schema must be a JSON object schema (type "object"), and the
// output schema, when there is one, a JSON object.
func schemaProblem(t *mcp.Tool) string {
	in, ok := canonical(t.InputSchema).(map[string]any)
	if !ok || in["type"] != "object" {
		return `its input schema is not a JSON schema of type "object"`
	}
	if t.OutputSchema != nil {
		if out, ok := canonical(t.OutputSchema).(map[string]any); !ok || out["type"] != "object" {
			return `its output schema is not a JSON schema of type "object"`
		}
	}
	return ""
}
