package upstream

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern"
)

func TestNormalURI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want "": refused
		why      string // a word of the refusal
	}{
		{in: "file:///srv/data/private/key", want: "file:///srv/data/private/key"},
		{in: "file:///srv/data/public/../private/key", want: "file:///srv/data/private/key"},
		{in: "file:///srv/data//private/key", want: "file:///srv/data/private/key"},
		{in: "file:///srv/data/%70rivate/key", want: "file:///srv/data/private/key"},
		{in: "file:///srv/data/./private/key", want: "file:///srv/data/private/key"},
		{in: "file:///srv/data/%2E%2E/data/private/key", want: "file:///srv/data/private/key"},
		{in: "file:///srv/data/private/key/..", want: "file:///srv/data/private/"},
		{in: "file:///../../etc/passwd", want: "file:///etc/passwd"},
		{in: "file:////srv/data/private/key", want: "file:///srv/data/private/key"},
		{in: "FILE:///srv/data/private/key", want: "file:///srv/data/private/key"},
		{in: "file://localhost/srv/data/private/key", want: "file:///srv/data/private/key"},
		{in: "file:/srv/data/private/key", want: "file:///srv/data/private/key"},
		{in: "file:///srv/data/a%20b%c3%a9", want: "file:///srv/data/a%20b%C3%A9"},
		{in: "file:///srv/data/100%25.txt", want: "file:///srv/data/100%25.txt"},
		{in: "hostile://readme", want: "hostile://readme"},
		{in: "demo://resource/static/document/architecture.md", want: "demo://resource/static/document/architecture.md"},
		{in: "HTTPS://Example.COM/a/./b/../c?q=%7e#F", want: "https://example.com/a/c?q=~#F"},
		{in: "https://User@Example.com/x", want: "https://User@example.com/x"},
		{in: "urn:isbn:0451450523", want: "urn:isbn:0451450523"},
		{in: "file:///srv/data/public%2F..%2Fprivate/key", why: "%2F"},
		{in: "file:///srv/data/public%2f..%2fprivate/key", why: "%2F"},
		{in: "file:///srv/data/public%5C..%5Cprivate/key", why: "%5C"},
		{in: `file:///srv/data/public\..\private\key`, why: `"\"`},
		{in: "file:///srv/data/%252e%252e/private/key", why: "%25XX"},
		{in: "file:///srv/data/private%00/key", why: "NUL"},
		{in: "file:///srv/data/pri\x00vate/key", why: "control character"},
		{in: "file:///srv/data/pri\nvate/key", why: "control character"},
		{in: "file:///srv/data/%zz", why: "two hex digits"},
		{in: "file:///srv/data/%4", why: "two hex digits"},
		{in: "file:///srv/data/public/x?/../../private/key", why: "no query or fragment"},
		{in: "file:///srv/data/x#y", why: "no query or fragment"},
		{in: "file:srv/data/x", why: "absolute path"},
		{in: "/srv/data/x", why: "absolute URI"},
		{in: "1x:y", why: "absolute URI"},
		{in: "", why: "absolute URI"},
	} {
		got, err := NormalURI(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("NormalURI(%q) = %q, want a refusal (%s)", tc.in, got, tc.why)
		case tc.want == "" && !strings.Contains(err.Error(), tc.why):
			t.Errorf("NormalURI(%q): %v, want it to say %s", tc.in, err, tc.why)
		case tc.want != "" && err != nil:
			t.Errorf("NormalURI(%q): %v", tc.in, err)
		case tc.want != "" && got != tc.want:
			t.Errorf("NormalURI(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if err == nil {
			// The normal form is its own.
			if again, err := NormalURI(got); err != nil || again != got {
				t.Errorf("NormalURI(%q) = %q, %v: not a fixed point", got, again, err)
			}
		}
	}
}

func TestCheckURI(t *testing.T) {
	t.Parallel()
	if s := CheckURI("file:///srv/data/a"); s != "" {
		t.Errorf("a normal URI: %s", s)
	}
	if s := CheckURI("file:///srv/data/public/../private/key"); !strings.Contains(s, "read file:///srv/data/private/key instead") {
		t.Errorf("a URI not in normal form: %s", s)
	}
	if s := CheckURI("file:///srv/data/" + strings.Repeat("a", MaxURIBytes)); !strings.Contains(s, "at most 8192") {
		t.Errorf("a long URI: %s", s)
	}
	if s := CheckURI("file:///srv/data/a%2Fb"); !strings.Contains(s, "cannot be judged as written") {
		t.Errorf("an encoded slash: %s", s)
	}
}

func FuzzNormalURI(f *testing.F) {
	for _, s := range []string{"file:///srv/data/a/../b", "x://h/%41%2e/./..//c?d#e", "file:/a", "a:b/../../c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := NormalURI(in)
		if err != nil {
			return
		}
		again, err := NormalURI(got)
		if err != nil || again != got {
			t.Fatalf("NormalURI(%q) = %q; again: %q, %v", in, got, again, err)
		}
		if p, ok := strings.CutPrefix(got, "file://"); ok {
			if strings.Contains(p, "/../") || strings.Contains(p, "/./") || strings.Contains(p, "//") || strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/.") {
				t.Fatalf("NormalURI(%q) = %q keeps a dot segment or an empty one", in, got)
			}
		}
	})
}

// TestJudgeResourcesURIs: a listed resource whose URI the gateway would
// refuse to read (not in normal form, too long) is not served; a template
// is bounded by its length only.
func TestJudgeResourcesURIs(t *testing.T) {
	t.Parallel()
	o := NewOffers()
	long := "file:///srv/data/" + strings.Repeat("a", MaxURIBytes)
	js := o.JudgeResources("fs", []*mcp.Resource{{URI: "file:///srv/data/a", Name: "a"}, {URI: "file:///srv/data/x/../b", Name: "b"}, {URI: long, Name: "c"}},
		[]*mcp.ResourceTemplate{{URITemplate: "file:///srv/data/{+path}", Name: "t"}, {URITemplate: long + "{x}", Name: "u"}})
	var served []string
	for _, r := range o.Resources() {
		served = append(served, r.Key())
	}
	if strings.Join(served, " ") != "file:///srv/data/a file:///srv/data/{+path}" {
		t.Errorf("served %.200q", served)
	}
	if len(js) != 3 {
		t.Fatalf("judgements: %+v", js)
	}
	for _, j := range js {
		if j.Reason != govern.ReasonToolNameInvalid || !strings.Contains(j.Message, "cannot be read through the gateway") || len(j.Message) > 1024 {
			t.Errorf("%.300s: %s", j.Tool, j.Message)
		}
	}
}
