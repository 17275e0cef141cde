package audit

import (
	"slices"
	"strings"
	"sync"

	"github.com/mitrity/mitrity/govern/dlp"
)

// An event records strings the agent, a script or an upstream chose (argv
// words, paths, names, messages, URIs). Before it is bounded, every one of
// them goes through two redactions:
//
//  1. The credential values the gateway holds (Record.Scrub), matched
//     against the event's strings as a whole, not string by string: a
//     value cut into pieces that are recorded apart (three argv words of
//     11 symbols each, three file names) is still a value. The strings
//     are joined twice, with a line end between them and with nothing,
//     and scanned for every form redaction knows; and the raw value's
//     pieces are looked for in every string, with anything between them
//     (dlp.Redactor.Pieces). Every part of a string that takes part in a
//     match is replaced by the value's marker.
//  2. The built-in DLP detectors (with their issuers' gitleaks rules),
//     whatever the profile binds: a secret found by its format
//     ([REDACTED:dlp:<detector>]), judged line by line as output is, the
//     strings one line (or more) each.
//
// What this covers is one event: pieces of a value spread over several
// events are each too short to be a match (docs/audit.md).

// SpanFinder is a Scrubber that also says where in a text it finds the
// values (dlp.Redactor.Matches): what scrubbing a list of strings as one
// text needs. A Scrubber that is not one scrubs each string on its own.
type SpanFinder interface {
	Matches([]byte) []dlp.Match
	// Pieces finds a value cut into pieces held in several of texts, with
	// anything between them (dlp.Redactor.Pieces).
	Pieces(texts []string) [][]dlp.Match
}

// detectors are the built-in DLP detectors, each with the gitleaks rules
// for its issuer (dlp.BuiltinNames), bound once: the audit holds none of
// their secrets, whatever a profile binds for its output. Not "all": a
// few gitleaks rules cost tens of milliseconds to compile the first time
// a string holds their keyword (curl-auth-user, at any curl command), and
// a one-shot exec would pay that on every call.
var detectors = sync.OnceValues(func() (dlp.Bindings, error) { return dlp.Bind(dlp.BuiltinNames()) })

// span is a part of one string to replace by marker.
type span struct {
	start, end int
	marker     string
}

// ScrubJoined returns vs with the credential values scrub knows redacted,
// the strings judged as one text (with and without a line end between
// them), so that pieces of one value in several strings are redacted too.
// vs itself is not changed. nil scrub: vs.
func ScrubJoined(scrub Scrubber, vs []string) []string {
	out := slices.Clone(vs)
	ps := make([]*string, len(out))
	for i := range out {
		ps[i] = &out[i]
	}
	scrubStrings(scrub, ps)
	return out
}

// redactStrings applies both redactions to the strings at ps, in place.
// Both judge the strings as they were recorded, and their spans are
// replaced together: one marker put in first could cut a secret the other
// would have found whole.
func redactStrings(scrub Scrubber, ps []*string) {
	ps = slices.DeleteFunc(ps, func(p *string) bool { return *p == "" })
	if len(ps) == 0 {
		return
	}
	var spans [][]span
	if f, ok := scrub.(SpanFinder); ok {
		spans = credentialSpans(f, ps)
	} else if scrub != nil {
		for _, p := range ps {
			*p = scrub.Scrub(*p)
		}
	}
	b, err := detectors()
	if err != nil {
		// The catalog is built from a table compiled into the binary: a
		// failure is a build defect, caught by every dlp test.
		panic("audit: the DLP detectors: " + err.Error())
	}
	joined, offs := join(ps, "\n")
	for _, h := range b.Scan(joined) {
		if spans == nil {
			spans = make([][]span, len(ps))
		}
		place(spans, ps, offs, h.Start, h.End, dlp.Marker(h.Detector))
	}
	if spans != nil {
		apply(ps, spans)
	}
}

// scrubStrings takes the credential values out of the strings at ps.
func scrubStrings(scrub Scrubber, ps []*string) {
	if scrub == nil {
		return
	}
	f, ok := scrub.(SpanFinder)
	if !ok {
		for _, p := range ps {
			if *p != "" {
				*p = scrub.Scrub(*p)
			}
		}
		return
	}
	if spans := credentialSpans(f, ps); spans != nil {
		apply(ps, spans)
	}
}

// credentialSpans are the parts of the strings at ps that hold a
// credential value, or a piece of one, the strings judged as a whole; nil
// when there are none.
func credentialSpans(f SpanFinder, ps []*string) [][]span {
	var spans [][]span
	for _, sep := range []string{"\n", ""} {
		joined, offs := join(ps, sep)
		for _, m := range f.Matches([]byte(joined)) {
			if spans == nil {
				spans = make([][]span, len(ps))
			}
			place(spans, ps, offs, m.Start, m.End, dlp.CredentialMarker(m.ID))
		}
		if len(ps) == 1 {
			break // one string: both joins are the same text
		}
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = *p
	}
	for i, ms := range f.Pieces(texts) {
		for _, m := range ms {
			if spans == nil {
				spans = make([][]span, len(ps))
			}
			spans[i] = append(spans[i], span{m.Start, m.End, dlp.CredentialMarker(m.ID)})
		}
	}
	return spans
}

// join returns the strings at ps joined by sep, and where each begins.
func join(ps []*string, sep string) (string, []int) {
	n := len(sep) * (len(ps) - 1)
	for _, p := range ps {
		n += len(*p)
	}
	var sb strings.Builder
	sb.Grow(n)
	offs := make([]int, len(ps))
	for i, p := range ps {
		if i > 0 {
			sb.WriteString(sep)
		}
		offs[i] = sb.Len()
		sb.WriteString(*p)
	}
	return sb.String(), offs
}

// place records the match [start, end) of the joined text in every
// string it overlaps.
func place(spans [][]span, ps []*string, offs []int, start, end int, marker string) {
	// The first string that ends after start.
	i, _ := slices.BinarySearch(offs, start+1)
	i = max(i-1, 0)
	for ; i < len(ps) && offs[i] < end; i++ {
		s, e := max(start-offs[i], 0), min(end-offs[i], len(*ps[i]))
		if s < e {
			spans[i] = append(spans[i], span{s, e, marker})
		}
	}
}

// apply replaces each string's spans (merged where they overlap, the
// first marker kept) by their markers.
func apply(ps []*string, spans [][]span) {
	for i, ss := range spans {
		if len(ss) == 0 {
			continue
		}
		// By start, the longer first: where spans overlap, one marker
		// stands for their union, the first one's.
		slices.SortStableFunc(ss, func(a, b span) int {
			if a.start != b.start {
				return a.start - b.start
			}
			return b.end - a.end
		})
		v := *ps[i]
		var sb strings.Builder
		pos := 0
		for k := 0; k < len(ss); {
			cur := ss[k]
			for k++; k < len(ss) && ss[k].start < cur.end; k++ {
				cur.end = max(cur.end, ss[k].end)
			}
			sb.WriteString(v[pos:cur.start])
			sb.WriteString(cur.marker)
			pos = cur.end
		}
		sb.WriteString(v[pos:])
		*ps[i] = sb.String()
	}
}

// texts are the strings of e that someone other than the gateway chose,
// in the order the event records them: what redactStrings judges.
func (e *Event) texts() []*string {
	d := &e.Data
	ps := []*string{&e.Subject, &d.Agent, &d.Session, &d.Tool, &d.ActionType, &d.Decision.Rule, &d.Decision.Message, &d.Decision.Error}
	if c := d.Command; c != nil {
		ps = append(ps, &c.Cwd)
		for i := range c.Resolved {
			r := &c.Resolved[i]
			for j := range r.Argv {
				ps = append(ps, &r.Argv[j])
			}
			ps = append(ps, &r.Context)
			for j := range r.Wrappers {
				ps = append(ps, &r.Wrappers[j])
			}
			for j := range r.Redirects {
				ps = append(ps, &r.Redirects[j].Path)
			}
			ps = append(ps, &r.Opaque)
		}
		for i := range c.Flags {
			ps = append(ps, &c.Flags[i].Detail)
		}
		for i := range c.Scripts {
			ps = append(ps, &c.Scripts[i].Path)
		}
	}
	if x := d.Execution; x != nil {
		for i := range x.PinnedScripts {
			ps = append(ps, &x.PinnedScripts[i].Path)
		}
		for i := range x.Egress.DeniedHosts {
			ps = append(ps, &x.Egress.DeniedHosts[i])
		}
		for _, l := range [][]string{x.ProtectedCreated, x.ProtectedModified, x.MaskReplaced} {
			for i := range l {
				ps = append(ps, &l[i])
			}
		}
		for i := range x.ArgvRefused {
			ps = append(ps, &x.ArgvRefused[i].Program)
		}
		for i := range x.CredentialWritten {
			ps = append(ps, &x.CredentialWritten[i].Path)
		}
	}
	if u := d.Upstream; u != nil {
		ps = append(ps, &u.Server, &u.Method, &u.Name)
	}
	if t := d.ToolDefinition; t != nil {
		ps = append(ps, &t.Server, &t.Tool, &t.Served)
	}
	if t := d.Destination; t != nil {
		ps = append(ps, &t.Target, &t.Host, &t.Detail)
	}
	return ps
}
