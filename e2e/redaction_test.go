package e2e

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// redactionPolicy grants github_token to ci under a profile that lets it
// run the programs below (some read their input in ways the analyzer
// cannot see), in the sandbox.
const redactionPolicy = `default_agent:
  profile: dev
agents:
  ci:
    profile: dev
    credentials: [github_token]
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
    opaque_with_credentials: allow
`

// redactionConfig maps github_token into every run of ci as $GITHUB_TOKEN.
func redactionConfig(w *world, asUser bool) string {
	runAs := ""
	if !asUser && os.Geteuid() == 0 {
		runAs = "  run_as: " + testUser + "\n"
	}
	return "exec:\n  enabled: true\n  shell: /bin/bash\n  default_cwd: " + w.ws + "\n" + runAs +
		"  sandbox:\n    backend: auto\n" +
		"  credentials:\n    env:\n      GITHUB_TOKEN: \"${credential:github_token}\"\n" +
		"credentials:\n  github_token:\n    env: E2E_GITHUB_TOKEN\n" +
		"policy: policy.yaml\naudit:\n  path: " + w.audit + "\n"
}

// redactionCases print the injected value through standard tools, each
// the way issue 12 item 3 (or a sibling of it) got it back.
var redactionCases = []struct {
	name, cmd string
	part      bool   // prints part of the value: the control recovers 16 characters of it
	want      string // if set, all the agent may see
}{
	{name: "raw", cmd: `echo "$GITHUB_TOKEN"`},
	{name: "xxd", cmd: `printf %s "$GITHUB_TOKEN" | xxd`},
	{name: "xxd -p", cmd: `printf %s "$GITHUB_TOKEN" | xxd -p`},
	{name: "xxd -c4", cmd: `printf %s "$GITHUB_TOKEN" | xxd -c4`},
	{name: "xxd -c1", cmd: `printf %s "$GITHUB_TOKEN" | xxd -c1`},
	{name: "xxd -e", cmd: `printf %s "$GITHUB_TOKEN" | xxd -e`},
	{name: "xxd -i", cmd: `printf %s "$GITHUB_TOKEN" | xxd -i`},
	{name: "xxd -b", cmd: `printf %s "$GITHUB_TOKEN" | xxd -b`},
	{name: "hexdump -C", cmd: `printf %s "$GITHUB_TOKEN" | hexdump -C`},
	{name: "hexdump", cmd: `printf %s "$GITHUB_TOKEN" | hexdump`},
	{name: "od -An -tx1", cmd: `printf %s "$GITHUB_TOKEN" | od -An -tx1`},
	{name: "od -tx1", cmd: `printf %s "$GITHUB_TOKEN" | od -tx1`},
	{name: "od -c", cmd: `printf %s "$GITHUB_TOKEN" | od -c`},
	{name: "od -x", cmd: `printf %s "$GITHUB_TOKEN" | od -x`},
	{name: "od", cmd: `printf %s "$GITHUB_TOKEN" | od`},
	{name: "od -An -tu1", cmd: `printf %s "$GITHUB_TOKEN" | od -An -tu1`},
	{name: "od -b", cmd: `printf %s "$GITHUB_TOKEN" | od -b`},
	{name: "base64", cmd: `printf %s "$GITHUB_TOKEN" | base64`},
	{name: "base64 last quantum", cmd: `printf %s "x$GITHUB_TOKEN" | base64`, want: "[REDACTED:credential:github_token]\n"},
	{name: "base64 wrapped", cmd: `for i in 1 2 3; do printf 'line %s\n' "$GITHUB_TOKEN"; done | base64`},
	{name: "basenc --base64url", cmd: `printf %s "$GITHUB_TOKEN" | basenc --base64url`},
	{name: "base32", cmd: `printf %s "$GITHUB_TOKEN" | base32`},
	{name: "basenc --base32hex", cmd: `printf %s "$GITHUB_TOKEN" | basenc --base32hex`},
	{name: "basenc --base2msbf", cmd: `printf %s "$GITHUB_TOKEN" | basenc --base2msbf`},
	{name: "rev", cmd: `echo "$GITHUB_TOKEN" | rev`},
	{name: "rot13", cmd: `echo "$GITHUB_TOKEN" | tr 'A-Za-z' 'N-ZA-Mn-za-m'`},
	{name: "upper", cmd: `echo "$GITHUB_TOKEN" | tr a-z A-Z`},
	{name: "lower", cmd: `echo "$GITHUB_TOKEN" | tr A-Z a-z`},
	{name: "fold -w5", cmd: `echo "$GITHUB_TOKEN" | fold -w5`},
	{name: "two lines", cmd: `T=$GITHUB_TOKEN; echo "${T:0:20}"; echo "${T:20}"`},
	{name: "halves with output between", cmd: `T=$GITHUB_TOKEN; echo "${T:0:19}"; ls / | head -3; echo "${T:19}"`, part: true},
	{name: "cut", cmd: `echo "$GITHUB_TOKEN" | cut -c3-`, part: true},
	{name: "sed separators", cmd: `echo "$GITHUB_TOKEN" | sed 's/./&-/g'`},
	{name: "per character", cmd: `echo "$GITHUB_TOKEN" | grep -o .`},
	{name: `\u per character`, cmd: `T=$GITHUB_TOKEN; for ((i = 0; i < ${#T}; i++)); do printf '\\u%04x' "'${T:i:1}"; done; echo`},
	{name: "decimal byte codes", cmd: `T=$GITHUB_TOKEN; for ((i = 0; i < ${#T}; i++)); do printf '%d ' "'${T:i:1}"; done; echo`},
	{name: "gzip | base64", cmd: `printf %s "$GITHUB_TOKEN" | gzip | base64`},
	{name: "environment | gzip | base64", cmd: `env | gzip | base64`},
	{name: "bzip2 | base64", cmd: `printf %s "$GITHUB_TOKEN" | bzip2 | base64 -w0`},
	{name: "utf-16 | base64", cmd: `printf %s "$GITHUB_TOKEN" | iconv -t UTF-16 | base64`},
	{name: "utf-16be | base64", cmd: `printf %s "$GITHUB_TOKEN" | iconv -t UTF-16BE | base64`},
	{name: "utf-16le | xxd -p", cmd: `printf %s "$GITHUB_TOKEN" | iconv -t UTF-16LE | xxd -p`},
	{name: "base64 | base64", cmd: `printf %s "$GITHUB_TOKEN" | base64 -w0 | base64`},
	{name: "json", cmd: `printf %s "$GITHUB_TOKEN" | jq -R .`},
	{name: "url-encoded", cmd: `printf %s "$GITHUB_TOKEN" | jq -sRr @uri`},
	{name: "shell-quoted", cmd: `printf '%q\n' "$GITHUB_TOKEN"`},
}

// TestRedaction attacks issue 12 item 3 from outside: through
// bin/mitrity-gateway exec, in a real sandbox, under both gateway
// identities, a granted agent prints its injected token through each tool
// above. The test reads back what the agent got with every inverse it has
// (hex, dump columns, base64, base32, base2, reversing, rot13, gunzip,
// bunzip2, UTF-16, \u and decimal codes, joining lines and stripping
// separators, case folded) and finds no 12 characters of the token in a
// row. A control runs the same command on the host and shows the same
// inverses recover the whole token, so every case can fail.
func TestRedaction(t *testing.T) {
	for _, c := range redactionCases {
		out := hostRun(t, c.cmd)
		if got := tokenLeak(out); got != foldAlnum(secretToken) && !(c.part && len(got) >= 16) {
			t.Fatalf("control %s: the inverses read back only %q from the host's output %q", c.name, got, out)
		}
	}
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, redactionPolicy, "auto")
		must(t, os.WriteFile(w.cfg, []byte(redactionConfig(w, asUser)), 0o644))
		for _, c := range redactionCases {
			r := w.exec(t, "--agent", "ci", "--json", "--", c.cmd)
			var res struct {
				Content []struct{ Text string }
				IsError bool
				Struct  map[string]any `json:"structuredContent"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) == 0 {
				t.Errorf("%s: exec --json: %v: %+v", c.name, err, r)
				continue
			}
			text := res.Content[0].Text
			if res.Struct["sandbox_mode"] != "bubblewrap" && res.Struct["sandbox_mode"] != "bubblewrap_no_seccomp" || res.Struct["exit_code"] != float64(0) {
				t.Errorf("%s: did not run in the sandbox: %v %q", c.name, res.Struct, text)
				continue
			}
			if strings.Contains(text, secretToken) || !strings.Contains(text, "[REDACTED:credential:github_token]") {
				t.Errorf("%s: the token is in the agent's output, or nothing was redacted: %q", c.name, text)
			}
			if got := tokenLeak(text); len(got) >= 12 {
				t.Errorf("%s: %q read back from what the agent got:\n%s", c.name, got, text)
			}
			if stdout, _ := res.Struct["stdout"].(string); c.want != "" && stdout != c.want {
				t.Errorf("%s: the agent got %q, want %q: the characters around the value carry bits of it", c.name, stdout, c.want)
			}
		}
		b, err := os.ReadFile(w.audit)
		must(t, err)
		if tokenLeak(string(b)) == foldAlnum(secretToken) {
			t.Error("the token reached the audit file")
		}
	})
}

// hostRun runs cmd on the host, as the test user where the tests run as
// root, with the token in its environment.
func hostRun(t *testing.T, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-c", cmd)
	c.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/tmp", "GITHUB_TOKEN=" + secretToken}
	c.Dir = "/tmp"
	if os.Geteuid() == 0 {
		uid, gid := ensureUser(t)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("on the host: %s: %v\n%s", cmd, err, out)
	}
	return string(out)
}

var (
	reNonHex  = regexp.MustCompile(`[^0-9a-fA-F]`)
	reNonB64  = regexp.MustCompile(`[^A-Za-z0-9+/_-]`)
	reNonB32  = regexp.MustCompile(`[^A-Z2-7]`)
	reNonB32H = regexp.MustCompile(`[^0-9A-V]`)
	reNonAlnm = regexp.MustCompile(`[^A-Za-z0-9]`)
	reOffset  = regexp.MustCompile(`(?m)^ *[0-9a-f]{6,16}:? ?`)
	reXXDCol  = regexp.MustCompile(`(?m)  +(\S.{0,15})$`)
	reHDCol   = regexp.MustCompile(`\|([^|\n]*)\|`)
	reWord    = regexp.MustCompile(`\b[0-9a-f]{4,16}\b`)
	reBits    = regexp.MustCompile(`[01]{8}`)
	reNumber  = regexp.MustCompile(`\d+`)
	reUEsc    = regexp.MustCompile(`(?i)\\u([0-9a-f]{4})`)
	reXEsc    = regexp.MustCompile(`(?i)(?:0x|\\x|%)([0-9a-f]{2})`)
	reB64Line = regexp.MustCompile(`(?m)^[A-Za-z0-9+/=]{8,}$`)
)

func foldAlnum(s string) string { return strings.ToLower(reNonAlnm.ReplaceAllString(s, "")) }

// tokenLeak applies every inverse to out and returns the longest run of
// the token's letters and digits (case folded) in any result.
func tokenLeak(out string) string {
	cands := inverses(out)
	for _, c := range slices.Clone(cands) {
		cands = append(cands, inverses(c)...) // two layers: base64 | base64, ...
	}
	tok := foldAlnum(secretToken)
	best := ""
	for _, c := range cands {
		c = foldAlnum(c)
		for i := 0; i+len(best) < len(tok); i++ {
			for j := i + len(best) + 1; j <= len(tok) && strings.Contains(c, tok[i:j]); j++ {
				best = tok[i:j]
			}
		}
	}
	return best
}

// inverses is what an attacker does to an output to read a value back.
func inverses(out string) []string {
	res := []string{out, reverse(out), rot13(out), strings.ReplaceAll(out, "\x00", "")}
	hexAt := func(s string) {
		d := reNonHex.ReplaceAllString(s, "")
		for k := 0; k < 2 && k < len(d); k++ {
			b, _ := hex.DecodeString(d[k : k+(len(d)-k)/2*2])
			res = append(res, string(b), strings.ReplaceAll(string(b), "\x00", ""))
		}
	}
	hexAt(out)
	noCols := reOffset.ReplaceAllString(reXXDCol.ReplaceAllString(reHDCol.ReplaceAllString(out, ""), ""), "")
	hexAt(noCols)
	var cols strings.Builder
	for _, m := range reHDCol.FindAllStringSubmatch(out, -1) {
		cols.WriteString(m[1])
	}
	for _, m := range reXXDCol.FindAllStringSubmatch(out, -1) {
		cols.WriteString(m[1])
	}
	res = append(res, cols.String(), reOffset.ReplaceAllString(out, ""))
	var words []byte
	for _, g := range reWord.FindAllString(noCols, -1) {
		b, _ := hex.DecodeString(g)
		slices.Reverse(b)
		words = append(words, b...)
	}
	res = append(res, string(words))
	var oct []byte
	for _, f := range strings.Fields(reOffset.ReplaceAllString(out, "")) {
		if v, err := strconv.ParseUint(f, 8, 16); err == nil && len(f) == 6 {
			oct = append(oct, byte(v), byte(v>>8))
		}
	}
	res = append(res, string(oct))
	for _, base := range []int{8, 10} {
		var b []byte
		for _, n := range reNumber.FindAllString(reOffset.ReplaceAllString(out, ""), -1) {
			if v, err := strconv.ParseUint(n, base, 8); err == nil {
				b = append(b, byte(v))
			}
		}
		res = append(res, string(b))
	}
	for _, s := range []string{out, reXXDCol.ReplaceAllString(reOffset.ReplaceAllString(out, ""), "")} {
		var bits []byte
		for _, g := range reBits.FindAllString(reNonHex.ReplaceAllString(s, ""), -1) {
			v, _ := strconv.ParseUint(g, 2, 8)
			bits = append(bits, byte(v))
		}
		res = append(res, string(bits))
	}
	var u []byte
	for _, m := range reUEsc.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseUint(m[1], 16, 16)
		u = append(u, byte(v))
	}
	res = append(res, string(u))
	var x []byte
	for _, m := range reXEsc.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseUint(m[1], 16, 8)
		x = append(x, byte(v))
	}
	res = append(res, string(x))
	// base64: the whole output's characters, and the block of its lines.
	for _, s := range []string{out, strings.Join(reB64Line.FindAllString(out, -1), "")} {
		d := strings.NewReplacer("-", "+", "_", "/").Replace(reNonB64.ReplaceAllString(s, ""))
		for k := 0; k < 4 && k < len(d); k++ {
			c := d[k:]
			if len(c)%4 == 1 {
				c = c[:len(c)-1]
			}
			b, _ := base64.RawStdEncoding.DecodeString(c)
			res = append(res, string(b), strings.ReplaceAll(string(b), "\x00", ""))
			if r, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				d, _ := io.ReadAll(r)
				res = append(res, string(d))
			}
			if d, _ := io.ReadAll(bzip2.NewReader(bytes.NewReader(b))); len(d) > 0 {
				res = append(res, string(d))
			}
		}
	}
	for _, b32 := range []struct {
		enc *base32.Encoding
		re  *regexp.Regexp
	}{{base32.StdEncoding, reNonB32}, {base32.HexEncoding, reNonB32H}} {
		d := b32.re.ReplaceAllString(out, "")
		enc := b32.enc.WithPadding(base32.NoPadding)
		for k := 0; k < 8 && k < len(d); k++ {
			for c := d[k:]; len(c) > 0; c = c[:len(c)-1] {
				if b, err := enc.DecodeString(c); err == nil {
					res = append(res, string(b))
					break
				}
			}
		}
	}
	return res
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

func rot13(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			b[i] = 'A' + (c-'A'+13)%26
		}
	}
	return string(b)
}

// dbPass is the review's punctuated credential: the encoders below each
// leave a different set of its punctuation literal.
const dbPass = "Xk9#mP2$vL7&nQ4+wR8/tY3=zB6!cF1@"

// TestRedactionPercentEncoders: a punctuated credential, mapped as
// $DB_PASS, printed by python3's urllib.parse.quote (which keeps '/') and
// jq's @uri (which keeps !*'()), and as HTML by html.escape, comes back in
// no form, and the audit file does not hold it. Before the decoded lane,
// quote's and @uri's output came back whole with no redaction.
func TestRedactionPercentEncoders(t *testing.T) {
	cases := []struct{ name, cmd string }{
		{"python3 quote", `python3 -c 'import os,urllib.parse as u;print(u.quote(os.environ["DB_PASS"]))'`},
		{"python3 html.escape", `python3 -c 'import os,html;print(html.escape(os.environ["DB_PASS"]))'`},
		{"jq @uri", `printf %s "$DB_PASS" | jq -sRr @uri`},
		{"jq @html", `printf %s "$DB_PASS" | jq -sRr @html`},
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	if _, err := exec.LookPath("jq"); err != nil {
		cases = cases[:2]
		t.Log("jq is not installed: its cases are skipped")
	}
	decoded := func(s string) string {
		s = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&#x27;", "'").Replace(s)
		if u, err := url.PathUnescape(s); err == nil {
			return u
		}
		return s
	}
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, strings.Replace(redactionPolicy, "credentials: [github_token]", "credentials: [github_token, db_pass]", 1), "auto")
		cfg := strings.Replace(redactionConfig(w, asUser), "      GITHUB_TOKEN: \"${credential:github_token}\"\n",
			"      GITHUB_TOKEN: \"${credential:github_token}\"\n      DB_PASS: \"${credential:db_pass}\"\n", 1)
		cfg = strings.Replace(cfg, "credentials:\n  github_token:\n", "credentials:\n  db_pass:\n    env: E2E_DB_PASS\n  github_token:\n", 1)
		must(t, os.WriteFile(w.cfg, []byte(cfg), 0o644))
		for _, c := range cases {
			r := w.execWithHostEnv(t, []string{"E2E_DB_PASS=" + dbPass}, "--agent", "ci", "--json", "--", c.cmd)
			var res struct {
				Content []struct{ Text string }
				Struct  map[string]any `json:"structuredContent"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) == 0 {
				t.Errorf("%s: exec --json: %v: %+v", c.name, err, r)
				continue
			}
			text := res.Content[0].Text
			if res.Struct["exit_code"] != float64(0) {
				t.Errorf("%s: %v %q", c.name, res.Struct, text)
				continue
			}
			stdout, _ := res.Struct["stdout"].(string)
			if !strings.Contains(text, "[REDACTED:credential:db_pass]") || strings.Contains(decoded(text), dbPass) ||
				strings.Contains(foldAlnum(decoded(stdout)), "xk9mp2vl7n") || strings.Contains(foldAlnum(decoded(stdout)), "zb6cf1") {
				t.Errorf("%s: the value came back: %q", c.name, text)
			}
			if strings.TrimSpace(stdout) != "[REDACTED:credential:db_pass]" {
				t.Errorf("%s: the agent got %q, want the marker alone", c.name, stdout)
			}
		}
		b, err := os.ReadFile(w.audit)
		must(t, err)
		if a := string(b); strings.Contains(a, dbPass) || strings.Contains(decoded(a), dbPass) || strings.Contains(foldAlnum(decoded(a)), "xk9mp2vl7n") {
			t.Error("the value reached the audit file")
		}
	})
}
