package initproc

import (
	"strconv"
	"strings"
)

// bridgeHost is the address of the egress bridge: the sandbox's loopback,
// or in mode none the host's.
const bridgeHost = "127.0.0.1"

// proxyVar is one variable WithProxy sets so that a program finds the run's
// egress proxy on its own. Finding it is all it does: the proxy decides every
// destination, and inside the sandbox there is no other way out.
type proxyVar struct {
	name string
	// value is the template: {url} is http://127.0.0.1:PORT, {port} is
	// PORT, {noproxy} the loopback names inside the sandbox (empty in mode
	// none), {javanoproxy} the same in the JVM's syntax.
	value string
	// keep: a value the command's environment already has stays, and ours
	// follows it after a space. Otherwise ours replaces it.
	keep bool
	// runtime names who reads it, why says why it is set so.
	runtime, why string
}

// proxyTable is the closed list of what WithProxy sets, in this order.
// docs/egress.md ("How programs find the proxy") has the same table, and a
// test holds the two together.
var proxyTable = []proxyVar{
	{name: "HTTP_PROXY", value: "{url}",
		runtime: "Go net/http, Python (urllib, requests, pip), Node.js with NODE_USE_ENV_PROXY, npm",
		why:     "the proxy for http:// URLs; curl, wget and git (libcurl) ignore this upper-case name (a CGI request's Proxy: header arrives as HTTP_PROXY)"},
	{name: "HTTPS_PROXY", value: "{url}",
		runtime: "the same, and curl, git",
		why:     "the proxy for https:// URLs, reached with CONNECT: TLS stays end to end"},
	{name: "ALL_PROXY", value: "{url}",
		runtime: "curl, git (libcurl)",
		why:     "any scheme without a variable of its own"},
	{name: "http_proxy", value: "{url}",
		runtime: "curl, wget, git, and everything above",
		why:     "the one spelling every tool reads; the only one curl and wget read for http://"},
	{name: "https_proxy", value: "{url}",
		runtime: "wget, and everything above",
		why:     "wget reads only the lower-case names"},
	{name: "all_proxy", value: "{url}",
		runtime: "curl, git (libcurl)",
		why:     "as ALL_PROXY"},
	{name: "NO_PROXY", value: "{noproxy}",
		runtime: "every client above",
		why: "only the sandbox's own loopback goes around the proxy (its network namespace has nothing else: a test suite's server is reached, nothing leaves); in mode none, where loopback is the host's, nothing does; " +
			"no exclusion list from elsewhere reaches the command"},
	{name: "no_proxy", value: "{noproxy}",
		runtime: "every client above",
		why:     "as NO_PROXY"},
	{name: "NODE_USE_ENV_PROXY", value: "1",
		runtime: "Node.js 22.21+ and 24.5+ (fetch from 24.0): fetch, http, https",
		why:     "Node reads the proxy variables only when this is 1; an older Node reads none, whatever is set"},
	{name: "JAVA_TOOL_OPTIONS", keep: true,
		value: "-Dhttp.proxyHost=" + bridgeHost + " -Dhttp.proxyPort={port} -Dhttps.proxyHost=" + bridgeHost +
			" -Dhttps.proxyPort={port} -Dhttp.nonProxyHosts={javanoproxy}",
		runtime: "every JVM: HttpURLConnection, java.net.http.HttpClient, whatever uses the default ProxySelector",
		why: "the JVM reads no proxy variable, only these properties, and every JVM reads this variable at start; " +
			"http.nonProxyHosts as NO_PROXY (its default exempts loopback, which in mode none is the host's); " +
			"kept after the environment's own options, and the last -D of a property wins"},
}

// Loopback names that go around the proxy inside the sandbox, whose
// loopback is its own.
const (
	sandboxNoProxy     = "localhost,127.0.0.1,::1"
	sandboxJavaNoProxy = "localhost|127.*|[::1]"
)

// expand is v's value for the bridge's port; old is the value the
// environment had ("" for none), which v either keeps or replaces.
// ownLoopback: the command runs in a network namespace of its own.
func (v proxyVar) expand(port int, old string, ownLoopback bool) string {
	p := strconv.Itoa(port)
	noProxy, javaNoProxy := "", ""
	if ownLoopback {
		noProxy, javaNoProxy = sandboxNoProxy, sandboxJavaNoProxy
	}
	val := strings.NewReplacer("{url}", "http://"+bridgeHost+":"+p, "{port}", p,
		"{noproxy}", noProxy, "{javanoproxy}", javaNoProxy).Replace(v.value)
	if v.keep && old != "" {
		return old + " " + val
	}
	return val
}

// isProxyVar says whether WithProxy sets name.
func isProxyVar(name string) bool {
	for _, v := range proxyTable {
		if v.name == name {
			return true
		}
	}
	return false
}
