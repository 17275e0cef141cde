//go:build linux

package initproc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// proxyLines is what WithProxy appends for port 40123, spelled out; java
// is JAVA_TOOL_OPTIONS' value (javaProxy's NONPROXY filled in), noProxy
// NO_PROXY's.
func proxyLines(java, noProxy string) []string {
	url := "http://127.0.0.1:40123"
	return []string{
		"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "ALL_PROXY=" + url,
		"http_proxy=" + url, "https_proxy=" + url, "all_proxy=" + url,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
		"NODE_USE_ENV_PROXY=1",
		"JAVA_TOOL_OPTIONS=" + java,
	}
}

const javaProxy = "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=40123 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=40123 -Dhttp.nonProxyHosts=NONPROXY"

func TestWithProxyEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		want []string // before proxyLines
		java string
	}{
		{name: "empty", java: javaProxy},
		{name: "others kept in order, ours replaced",
			env: []string{"PATH=/bin", "HTTPS_PROXY=http://evil:1", "no_proxy=*", "A=b=c", "NODE_USE_ENV_PROXY=0",
				"ALL_PROXY=socks5://x:1", "http_proxy=", "NO_PROXY=10.0.0.0/8"},
			want: []string{"PATH=/bin", "A=b=c"}, java: javaProxy},
		{name: "JAVA_TOOL_OPTIONS kept, ours after it (the last -D wins)",
			env:  []string{"JAVA_TOOL_OPTIONS=-Xmx256m -Dhttp.proxyHost=evil -Dhttp.nonProxyHosts=*", "HOME=/h"},
			want: []string{"HOME=/h"}, java: "-Xmx256m -Dhttp.proxyHost=evil -Dhttp.nonProxyHosts=* " + javaProxy},
		{name: "an empty JAVA_TOOL_OPTIONS adds nothing",
			env: []string{"JAVA_TOOL_OPTIONS="}, java: javaProxy},
		{name: "a name twice: the first, as getenv reads it, and no copy stays",
			env:  []string{"JAVA_TOOL_OPTIONS=-Xss1m", "HTTP_PROXY=http://a:1", "JAVA_TOOL_OPTIONS=-Xss2m", "HTTP_PROXY=http://b:1"},
			java: "-Xss1m " + javaProxy},
		{name: "other spellings and entries without = are not ours",
			env:  []string{"Http_Proxy=http://x:1", "FTP_PROXY=http://x:1", "ODD", "NODE_USE_ENV_PROXY_X=1"},
			want: []string{"Http_Proxy=http://x:1", "FTP_PROXY=http://x:1", "ODD", "NODE_USE_ENV_PROXY_X=1"}, java: javaProxy},
	} {
		// Inside the sandbox its own loopback goes around the proxy; in
		// mode none the host's does not.
		for _, own := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/own loopback %v", tc.name, own), func(t *testing.T) {
				t.Parallel()
				noProxy, javaNo := "", ""
				if own {
					noProxy, javaNo = "localhost,127.0.0.1,::1", "localhost|127.*|[::1]"
				}
				got := WithProxy(tc.env, 40123, own)
				assert.Check(t, is.DeepEqual(got, append(slices.Clone(tc.want), proxyLines(strings.ReplaceAll(tc.java, "NONPROXY", javaNo), noProxy)...)))
			})
		}
	}
}

func TestProxyTableComplete(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, v := range proxyTable {
		assert.Check(t, !seen[v.name], "%s twice", v.name)
		seen[v.name] = true
		assert.Check(t, v.runtime != "" && v.why != "", "%s: say who reads it and why", v.name)
		assert.Check(t, !strings.ContainsAny(v.expand(1, "", true)+v.expand(1, "", false), "{}"), "%s: a placeholder left", v.name)
	}
}

// TestProxyTableDocumented keeps docs/egress.md's table of the variables
// the same list, with the same values, in the same order.
func TestProxyTableDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/egress.md")
	if err != nil {
		t.Skip("docs/egress.md is not beside this module")
	}
	_, sec, ok := bytes.Cut(doc, []byte("\n## How programs find the proxy\n"))
	assert.Assert(t, ok, "docs/egress.md has no section \"How programs find the proxy\"")
	sec, _, _ = bytes.Cut(sec, []byte("\n## "))
	type row struct{ Name, Value string }
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(sec))
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows = append(rows, row{strings.Trim(strings.TrimSpace(cells[1]), "`"), strings.TrimSpace(cells[2])})
	}
	var want []row
	ph := strings.NewReplacer("{url}", "http://127.0.0.1:PORT", "{port}", "PORT", "{noproxy}", "LOOPBACK", "{javanoproxy}", "LOOPBACK")
	for _, v := range proxyTable {
		val := "(empty)"
		if v.value != "" {
			val = "`" + ph.Replace(v.value) + "`"
		}
		if v.keep {
			val = "_existing value_, then " + val
		}
		want = append(want, row{v.name, val})
	}
	assert.Check(t, is.DeepEqual(rows, want))
}
