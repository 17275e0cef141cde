package egress

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestLogTo(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		keep       zerolog.Level
		want       map[string]any // nil: nothing logged
	}{
		{"a decision at its level", `{"level":"info","time":"2026-12-01T00:00:00Z","event":"egress.decision","target":"denied.invalid:80","allowed":false,"message":"refused"}`,
			zerolog.InfoLevel, map[string]any{"level": "info", "component": BinaryName, "event": "egress.decision", "target": "denied.invalid:80", "allowed": false, "message": "refused"}},
		{"below the gateway's level", `{"level":"debug","message":"detail"}`, zerolog.InfoLevel, nil},
		{"control characters quoted", `{"level":"warn","target":"x\u001b]0;owned\u0007","message":"m"}`,
			zerolog.InfoLevel, map[string]any{"level": "warn", "component": BinaryName, "target": `"x\x1b]0;owned\a"`, "message": "m"}},
		{"not JSON", "panic: boom", zerolog.InfoLevel,
			map[string]any{"level": "warn", "component": BinaryName, "line": "panic: boom", "message": "a log line of the egress proxy that is not JSON"}},
		// A destination spelt with a credential is scrubbed in every
		// string, the message and a list's too, before the quoting.
		{"scrubbed", `{"level":"warn","target":"s3cr3tvalue.evil.invalid:443","addrs":["s3cr3tvalue"],"n":1,"message":"s3cr3tvalue\u0007"}`,
			zerolog.InfoLevel, map[string]any{"level": "warn", "component": BinaryName, "target": "[X].evil.invalid:443", "addrs": []any{"[X]"}, "n": float64(1), "message": `"[X]\a"`}},
		{"not JSON, scrubbed", "panic: s3cr3tvalue", zerolog.InfoLevel,
			map[string]any{"level": "warn", "component": BinaryName, "line": "panic: [X]", "message": "a log line of the egress proxy that is not JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := LogTo(zerolog.New(&out).Level(tc.keep), func(s string) string { return strings.ReplaceAll(s, "s3cr3tvalue", "[X]") })
			n, err := w.Write([]byte(tc.line + "\n"))
			assert.NilError(t, err)
			assert.Check(t, is.Equal(n, len(tc.line)+1))
			if tc.want == nil {
				assert.Check(t, is.Equal(out.Len(), 0), out.String())
				return
			}
			var got map[string]any
			assert.NilError(t, json.Unmarshal(out.Bytes(), &got), out.String())
			assert.Check(t, is.DeepEqual(got, tc.want))
			assert.Check(t, !strings.ContainsRune(out.String(), 0x1b), "a raw escape reached the log")
		})
	}
	assert.Check(t, is.Equal(LogLevel(zerolog.New(nil).Level(zerolog.DebugLevel)), "debug"))
	assert.Check(t, is.Equal(LogLevel(zerolog.New(nil).Level(zerolog.Disabled)), "error"))
}
