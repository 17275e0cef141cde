// Package logging builds the zerolog logger every binary sets up in its
// cli.App Before hook and passes into the constructors it calls.
package logging

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Levels is the help text for a --log-level flag.
const Levels = "log level: trace, debug, info, warn, error or disabled"

// New returns a human-readable logger writing to w at the named level, in
// colour only when w is a terminal.
func New(w io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("invalid --log-level %q: want trace, debug, info, warn, error or disabled", level)
	}
	f, isFile := w.(*os.File)
	color := isFile && isatty.IsTerminal(f.Fd())
	out := zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !color}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}
