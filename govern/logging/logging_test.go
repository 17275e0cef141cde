package logging

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestNew(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "warn")
	assert.NilError(t, err)
	assert.Equal(t, l.GetLevel(), zerolog.WarnLevel)
	l.Info().Msg("hidden")
	l.Warn().Msg("shown")
	assert.Check(t, !bytes.Contains(buf.Bytes(), []byte("hidden")))
	assert.Check(t, is.Contains(buf.String(), "shown"))

	for _, bad := range []string{"", "loud"} {
		_, err := New(&buf, bad)
		assert.ErrorContains(t, err, "invalid --log-level")
	}
}
