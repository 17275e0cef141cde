package egress

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/rs/zerolog"
)

// LogTo is a writer for ProcessOptions.Log that hands each of the proxy's
// log lines (JSON, one line per Write) to l at the line's own level, with
// component=mitrity-egressproxy: the proxy's decisions reach the operator
// in the gateway's own log, filtered by its level. A string the run chose
// (a destination, a header) with control characters in it is quoted, so
// that it cannot write to the operator's terminal. Every string is passed
// through scrub first (nil: none): a run can spell a destination with a
// credential it was given (CONNECT $TOKEN.evil.example:443), and the proxy,
// which holds no values, logs the name as asked.
func LogTo(l zerolog.Logger, scrub func(string) string) io.Writer {
	if scrub == nil {
		scrub = func(s string) string { return s }
	}
	return logRelay{l, scrub}
}

// LogLevel is the level to start the proxy at so that it produces what l
// keeps: l's own level (warn when l keeps nothing finer than that).
func LogLevel(l zerolog.Logger) string {
	switch lvl := l.GetLevel(); lvl {
	case zerolog.TraceLevel, zerolog.DebugLevel, zerolog.InfoLevel, zerolog.WarnLevel, zerolog.ErrorLevel:
		return lvl.String()
	}
	return "error"
}

type logRelay struct {
	l     zerolog.Logger
	scrub func(string) string
}

func (r logRelay) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if line == "" {
		return len(p), nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		r.l.Warn().Str("component", BinaryName).Str("line", safe(r.scrub(line))).Msg("a log line of the egress proxy that is not JSON")
		return len(p), nil
	}
	lvl, err := zerolog.ParseLevel(fmt.Sprint(m["level"]))
	if err != nil || lvl == zerolog.NoLevel {
		lvl = zerolog.InfoLevel
	}
	msg, _ := m["message"].(string)
	delete(m, "level")
	delete(m, "message")
	delete(m, "time")
	for k, v := range m {
		switch v := v.(type) {
		case string:
			m[k] = safe(r.scrub(v))
		case []any: // addrs
			for i, e := range v {
				if s, ok := e.(string); ok {
					v[i] = safe(r.scrub(s))
				}
			}
		}
	}
	r.l.WithLevel(lvl).Str("component", BinaryName).Fields(m).Msg(safe(r.scrub(msg)))
	return len(p), nil
}

// safe quotes s when it holds a control character.
func safe(s string) string {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.QuoteToASCII(s)
	}
	return s
}
