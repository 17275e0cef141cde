package config

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestGoodUpstreams: both kinds of upstream, every key set, read as
// written; relative paths resolve next to the file; what is not written
// takes its default.
func TestGoodUpstreams(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("testdata/good")
	assert.NilError(t, err)
	files := maps.Clone(stagedFiles)
	files["/srv/data"] = os.ModeDir | 0o755
	files[filepath.Join(dir, "cache")] = os.ModeDir | 0o755
	files[filepath.Join(dir, "ca.pem")] = 0o644
	c, err := fakeHost(files).Load("testdata/good/upstreams.yaml")
	assert.NilError(t, err)
	want := map[string]Upstream{
		"fs": {
			Name:    "fs",
			Command: []string{"/usr/local/bin/mcp-server-filesystem", "/srv/data"},
			Env:     map[string]Template{"GITHUB_TOKEN": "${credential:github_token}", "LOG_LEVEL": "debug"},
			Cwd:     "/srv/data", Sandbox: UpstreamSandboxed,
			WritableRoots:      []string{"/srv/data", filepath.Join(dir, "cache")},
			Egress:             []string{"api.github.com", "*.npmjs.org:443"},
			CallTimeoutSeconds: 15, ResultMaxBytes: 65536,
			AllowSampling: true,
		},
		"local-tools": {
			Name:    "local-tools",
			Command: []string{"npx", "-y", "@modelcontextprotocol/server-everything"},
			Sandbox: UpstreamUnsandboxed,
			// The defaults.
			CallTimeoutSeconds: DefaultUpstreamCallTimeoutSeconds, ResultMaxBytes: DefaultUpstreamResultMaxBytes,
		},
		"api": {
			Name:    "api",
			URL:     "https://mcp.example.com/mcp",
			Headers: map[string]Template{"Authorization": "Bearer ${credential:api-key}", "X-Agent": "mitrity"},
			TLS:     UpstreamTLS{CAFile: filepath.Join(dir, "ca.pem"), ServerName: "mcp.internal"},
			// sandbox is a command upstream's; a url upstream keeps the
			// default word, unused.
			Sandbox:            UpstreamSandboxed,
			CallTimeoutSeconds: DefaultUpstreamCallTimeoutSeconds, ResultMaxBytes: DefaultUpstreamResultMaxBytes,
		},
	}
	assert.DeepEqual(t, c.Upstreams, want, cmpConfig...)
	assert.DeepEqual(t, NewUpstream("x"), Upstream{Name: "x", Sandbox: UpstreamSandboxed,
		CallTimeoutSeconds: DefaultUpstreamCallTimeoutSeconds, ResultMaxBytes: DefaultUpstreamResultMaxBytes}, cmpConfig...)

	fs, api := c.Upstreams["fs"], c.Upstreams["api"]
	assert.Check(t, fs.Stdio())
	assert.Check(t, !api.Stdio())
	assert.DeepEqual(t, fs.CredentialIDs(), []string{"github_token"})
	assert.DeepEqual(t, api.CredentialIDs(), []string{"api-key"})
	assert.Check(t, is.Len(c.Upstreams["local-tools"].CredentialIDs(), 0))

	// A config without upstreams has none.
	none, err := fakeHost(stagedFiles).Parse("/etc/m.yaml", []byte("# empty\n"))
	assert.NilError(t, err)
	assert.Check(t, is.Len(none.Upstreams, 0))
}

func TestTemplate(t *testing.T) {
	t.Parallel()
	values := map[string]string{"gh": "tok-1", "api-key": "k$2"}
	tests := []struct {
		t    Template
		ids  []string
		want string
		err  string
	}{
		{"plain", nil, "plain", ""},
		{"${credential:gh}", []string{"gh"}, "tok-1", ""},
		{"Bearer ${credential:api-key}", []string{"api-key"}, "Bearer k$2", ""},
		{"${credential:gh}:${credential:api-key}", []string{"gh", "api-key"}, "tok-1:k$2", ""},
		{"${credential:gh} ${credential:nope}", []string{"gh", "nope"}, "", "credential nope was not fetched"},
		{"$credential:gh", nil, "$credential:gh", ""},
		// A value that itself looks like a reference is not expanded again.
		{"${credential:gh}", []string{"gh"}, "${credential:api-key}", ""},
	}
	for i, tt := range tests {
		vs := values
		if i == len(tests)-1 {
			vs = map[string]string{"gh": "${credential:api-key}", "api-key": "never"}
		}
		assert.Check(t, is.DeepEqual(tt.t.IDs(), tt.ids), "%q", tt.t)
		got, err := tt.t.Expand(vs)
		if tt.err != "" {
			assert.Check(t, is.Error(err, tt.err), "%q", tt.t)
			continue
		}
		assert.Check(t, err, "%q", tt.t)
		assert.Check(t, is.Equal(got, tt.want), "%q", tt.t)
	}
}
