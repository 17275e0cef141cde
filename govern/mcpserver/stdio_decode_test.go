package mcpserver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"gotest.tools/v3/assert"
)

// FuzzCheckMessage holds the guard's own decoding of a request to the
// SDK's: whatever line the guard passes on, jsonrpc.DecodeMessage decodes
// too (else the SDK would have ended the session on it), to the same
// method, id and params. Seeds: the lines of FuzzStdioFraming's corpus and
// the cases below.
func FuzzCheckMessage(f *testing.F) {
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":null}]}}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":-0,"method":"ping","params":[]}`,
		`{"jsonrpc":"2.0","id":"\u00e9\ud83d\ude00","method":"m\u0041"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`,
		` {"jsonrpc":"2.0","id":2,"method":"ping","params":{ "a" : 1 }} ` + "\r",
		`{"jsonrpc":"2.0","id":3,"method":"x","params":{"s":"\xff"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","error":5}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","result":{},"error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"x","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
		`{"jsonrpc":"2.0","id":5,"method":"x","params":{"a":"` + strings.Repeat("{", 1200) + `"}}`,
	} {
		f.Add([]byte(l))
	}
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzStdioFraming/*")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		// go test fuzz v1, then []byte("...")
		for _, l := range strings.Split(string(b), "\n")[1:] {
			if q, ok := strings.CutPrefix(l, "[]byte("); ok {
				if v, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					f.Add([]byte(v))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		v := checkMessage(line)
		if v.msg == nil {
			return
		}
		want, err := jsonrpc.DecodeMessage(bytes.Trim(line, " \t\r\n"))
		assert.NilError(t, err, "the guard passed on a line the SDK refuses: %q", line)
		got, ok := v.msg.(*jsonrpc.Request)
		if !ok {
			return // a response: decoded by the SDK itself
		}
		wreq, ok := want.(*jsonrpc.Request)
		assert.Assert(t, ok, "the guard made a request of %q, the SDK %T", line, want)
		assert.Equal(t, got.Method, wreq.Method)
		assert.Equal(t, got.ID, wreq.ID)
		assert.Equal(t, compact(t, got.Params), compact(t, wreq.Params))
	})
}

func compact(t *testing.T, raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	assert.NilError(t, json.Compact(&b, raw))
	return b.String()
}
