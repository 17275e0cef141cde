package admission_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/admission"
)

// FuzzAdmitRequest feeds arbitrary bytes to the admit endpoint: it never
// panics, answers 200 only for a request that decodes and validates (and
// passes exactly that request on), and otherwise a protocol error that
// never reached the backend.
func FuzzAdmitRequest(f *testing.F) {
	for _, seed := range []string{
		string(mustJSON(f, validAdmit())),
		`{"framework":"claude","agent":"a","tool_name":"Bash","cwd":"/","command":"ls"}`,
		`{"framework":"gemini","agent":"gemini-cli","tool_name":"run_shell_command","cwd":"/w","command":"echo \u0000"}`,
		`{"framework":"codex","agent":"a","tool_name":"Bash","cwd":"/","command":"ls","timeout_seconds":-1}`,
		`{"framework":"claude","agent":"a","tool_name":"Bash","cwd":"/","command":"ls"}}`,
		`{"framework":"claude","agent":"a","tool_name":"Bash","cwd":"/","command":"ls","COMMAND":"rm"}`,
		`{"framework":"claude","agent":"a","tool_name":"Bash","cwd":"/","command":"ls","x":1}`,
		`{"framework":"claude","agent":"a b","tool_name":"Bash","cwd":"rel","command":"ls"}`,
		`[]`, `null`, `""`, `{}`, ``, `{"framework":`, "\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got []admission.AdmitRequest
		b := &fakeBackend{admit: func(_ context.Context, _ int, req admission.AdmitRequest) (admission.AdmitResponse, error) {
			got = append(got, req)
			return admission.AdmitResponse{Decision: admission.Allow, Message: "allowed", Routing: admission.RoutingFramework}, nil
		}}
		h := admission.Handler(b, func(context.Context) (int, bool) { return 1000, true }, "fuzz")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, admission.PathAdmit, strings.NewReader(string(body))))

		var lenient admission.AdmitRequest
		parsed := json.Unmarshal(body, &lenient) == nil
		switch rec.Code {
		case http.StatusOK:
			assert.Assert(t, parsed, "200 for a body that does not parse")
			assert.NilError(t, lenient.Validate(), "200 for a request that does not validate")
			assert.Assert(t, len(body) <= admission.MaxRequestBytes)
			assert.DeepEqual(t, got, []admission.AdmitRequest{lenient})
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			assert.Equal(t, len(got), 0, "a refused request reached the backend")
			var e admission.Error
			assert.NilError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			assert.Equal(t, e.Code, admission.ErrInvalidRequest)
			assert.Assert(t, e.Message != "")
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if parsed && lenient.Validate() != nil {
			assert.Assert(t, rec.Code != http.StatusOK)
		}
	})
}

// FuzzRedeemRequest feeds arbitrary bytes to the redeem endpoint: it never
// panics, streams frames (the result last) only for a request that decodes
// and validates, passing exactly that request on, and otherwise answers a
// protocol error that never reached the backend. Seeds:
// testdata/fuzz/FuzzRedeemRequest.
func FuzzRedeemRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		var got []admission.RedeemRequest
		b := &fakeBackend{redeem: func(_ context.Context, _ int, req admission.RedeemRequest, out func(admission.Frame) error) (admission.Result, error) {
			got = append(got, req)
			_ = out(admission.Frame{Type: admission.FrameStdout, Data: []byte("out")})
			return admission.Result{ExitCode: 0, Status: "completed"}, nil
		}}
		h := admission.Handler(b, func(context.Context) (int, bool) { return 1000, true }, "fuzz")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, admission.PathRedeem, strings.NewReader(string(body))))

		var lenient admission.RedeemRequest
		parsed := json.Unmarshal(body, &lenient) == nil
		switch rec.Code {
		case http.StatusOK:
			assert.Assert(t, parsed, "200 for a body that does not parse")
			assert.NilError(t, lenient.Validate(), "200 for a request that does not validate")
			assert.DeepEqual(t, got, []admission.RedeemRequest{lenient})
			assert.Equal(t, rec.Header().Get("Content-Type"), "application/x-ndjson")
			lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
			assert.Equal(t, len(lines), 2, rec.Body.String())
			var last admission.Frame
			assert.NilError(t, json.Unmarshal([]byte(lines[1]), &last))
			assert.Equal(t, last.Type, admission.FrameResult)
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			assert.Equal(t, len(got), 0, "a refused request reached the backend")
			var e admission.Error
			assert.NilError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			assert.Equal(t, e.Code, admission.ErrInvalidRequest)
			assert.Assert(t, e.Message != "")
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if parsed && lenient.Validate() != nil {
			assert.Assert(t, rec.Code != http.StatusOK)
		}
	})
}
