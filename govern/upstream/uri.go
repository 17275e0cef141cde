package upstream

import (
	"errors"
	"fmt"
	"strings"
)

// A resource read is judged by its URI (tool permissions match the action
// type mcp:<server>__resource:<uri>; rules see it as upstream_tool), and
// the upstream reads what the URI means to it, not its spelling. Two
// spellings of one resource (file:///srv/data/public/../private/key and
// file:///srv/data/private/key) would let a pattern that denies one pass
// the other. So the gateway reads only URIs already in normal form: a URI
// whose normal form differs from what the agent sent is refused, and the
// refusal names the normal form to read instead. Refusing rather than
// normalizing keeps one rule simple to check: what the upstream gets is
// byte for byte what was judged and what the audit event names.
// Normalizing and forwarding would hand the upstream a URI the agent
// never sent, and any reading of the original that normalization did not
// foresee would still reach a judgement made on the other.
//
// The normal form is RFC 3986 section 6.2.2's, and stricter where servers
// differ:
//
//   - the scheme and the host in lower case; hex digits of a
//     percent-encoding in upper case; percent-encoded unreserved
//     characters (letters, digits, "-", ".", "_", "~") decoded;
//   - dot segments removed from the path (remove_dot_segments, 5.2.4),
//     after that decoding (%2E%2E is ..);
//   - empty segments collapsed (a//b is a/b): file systems read them as
//     one, and a server mapping any scheme's paths to files may too;
//   - file: URIs as file:///<path>: file:/p and file://localhost/p are
//     file:///p, and no query or fragment (a server that takes the rest of
//     the URI as a path would read "?/../x" as part of it).
//
// Refused outright, with no normal form to offer: a percent-encoded "/" or
// "\" in the path (%2F, %5C: a server that decodes before splitting reads
// public%2F..%2Fprivate as public/../private, one that splits first reads
// one segment, and which one it is cannot be told from here; Node's
// fileURLToPath refuses them too), an encoded "%" that starts another
// escape (%252F: a server that decodes twice reads it as /), a NUL or any
// control character, a literal "\", and a "%" not followed by two hex
// digits. A URI longer than MaxURIBytes is refused before any of this.

// MaxURIBytes bounds a resource URI the gateway reads or serves: MCP
// resource URIs are short, and an event names the URI it read (twice: in
// the action type and the upstream card), into room reserved beforehand.
const MaxURIBytes = 8 << 10

// NormalURI is uri in the normal form above, or why it has none.
func NormalURI(uri string) (string, error) {
	for i := 0; i < len(uri); i++ {
		switch c := uri[i]; {
		case c < 0x20 || c == 0x7f:
			return "", fmt.Errorf("it holds a control character (byte %#02x at %d)", c, i)
		case c == '\\':
			return "", errors.New(`it holds a "\" (a path separator to some servers): write "/", or %5C is refused too`)
		}
	}
	colon := strings.IndexByte(uri, ':')
	if colon <= 0 || !isScheme(uri[:colon]) {
		return "", errors.New("it is not an absolute URI (scheme:...)")
	}
	scheme := strings.ToLower(uri[:colon])
	rest := uri[colon+1:]
	var fragment, query string
	hasFragment, hasQuery := false, false
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, fragment, hasFragment = rest[:i], rest[i+1:], true
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query, hasQuery = rest[:i], rest[i+1:], true
	}
	hasAuthority := strings.HasPrefix(rest, "//")
	var authority, path string
	if hasAuthority {
		rest = rest[2:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			authority, path = rest[:i], rest[i:]
		} else {
			authority = rest
		}
	} else {
		path = rest
	}
	var err error
	if authority, err = normalAuthority(authority); err != nil {
		return "", err
	}
	if path, err = normalEscapes(path, true); err != nil {
		return "", err
	}
	if query, err = normalEscapes(query, false); err != nil {
		return "", err
	}
	if fragment, err = normalEscapes(fragment, false); err != nil {
		return "", err
	}
	if scheme == "file" {
		switch {
		case hasQuery || hasFragment:
			return "", errors.New("a file: URI has no query or fragment here (a server may read them as part of the path)")
		case !strings.HasPrefix(path, "/"):
			return "", errors.New("a file: URI needs an absolute path (file:///...)")
		case authority == "localhost":
			authority = ""
		}
		hasAuthority = true
	}
	// Empty segments collapsed first (a//../b is b to a file system),
	// then dot segments; removing them can leave a "//" (a/..//b), so
	// until neither changes anything.
	for {
		p := path
		for strings.Contains(p, "//") {
			p = strings.ReplaceAll(p, "//", "/")
		}
		if strings.Contains(p, "/") || p == "." || p == ".." {
			p = removeDotSegments(p)
		}
		if p == path {
			break
		}
		path = p
	}
	if hasAuthority && path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	var b strings.Builder
	b.WriteString(scheme + ":")
	if hasAuthority {
		b.WriteString("//" + authority)
	}
	b.WriteString(path)
	if hasQuery {
		b.WriteString("?" + query)
	}
	if hasFragment {
		b.WriteString("#" + fragment)
	}
	return b.String(), nil
}

// CheckURI is the sentence that refuses reading uri, or "" when it may be
// read as it is.
func CheckURI(uri string) string {
	if len(uri) > MaxURIBytes {
		return fmt.Sprintf("the resource URI is %d bytes; at most %d are read (MCP resource URIs are short: a longer one is refused, never cut)", len(uri), MaxURIBytes)
	}
	normal, err := NormalURI(uri)
	switch {
	case err != nil:
		return "the resource URI cannot be judged as written: " + err.Error()
	case normal != uri:
		return fmt.Sprintf("the resource URI is not in normal form (RFC 3986: case, percent-encoding, dot segments, duplicate slashes); read %s instead, which is what it is judged as", normal)
	}
	return ""
}

func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// normalAuthority is the authority with its host in lower case and its
// escapes normalized; userinfo keeps its case.
func normalAuthority(a string) (string, error) {
	a, err := normalEscapes(a, false)
	if err != nil {
		return "", err
	}
	user, host := "", a
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		user, host = a[:i+1], a[i+1:]
	}
	return user + strings.ToLower(host), nil
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// normalEscapes decodes the escapes of unreserved characters and writes
// the others with upper-case hex; in a path it refuses the escapes that
// servers read differently.
func normalEscapes(s string, path bool) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("a %% at %d is not followed by two hex digits", i)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("a %% at %d is not followed by two hex digits", i)
		}
		c := hi<<4 | lo
		switch {
		case c == 0:
			return "", errors.New("it holds an encoded NUL (%00)")
		case path && (c == '/' || c == '\\'):
			return "", fmt.Errorf(`its path holds an encoded "%c" (%%%02X), which servers read differently (as a separator, or as part of a name); write the path without it`, c, c)
		case path && c == '%' && i+4 < len(s):
			if _, ok := unhex(s[i+3]); ok {
				if _, ok := unhex(s[i+4]); ok {
					return "", errors.New(`its path holds an encoded "%" that starts another escape (%25XX), which a server that decodes twice reads as that character`)
				}
			}
		}
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
		i += 2
	}
	return b.String(), nil
}

// removeDotSegments is RFC 3986 section 5.2.4's algorithm.
func removeDotSegments(in string) string {
	var out []string // segments written, each with its leading "/" if any
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "/..":
			in = "/"
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "." || in == "..":
			in = ""
		default:
			start := 0
			if in[0] == '/' {
				start = 1
			}
			end := strings.IndexByte(in[start:], '/')
			if end < 0 {
				end = len(in)
			} else {
				end += start
			}
			out = append(out, in[:end])
			in = in[end:]
		}
	}
	return strings.Join(out, "")
}
