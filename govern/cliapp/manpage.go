//go:build mitrity_manpage

package cliapp

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// manPage writes app's man page (section 1, roff) to stdout and is true
// when MITRITY_MANPAGE is set: the packages' man pages come from the CLI
// definitions themselves. Built only with -tags mitrity_manpage (and
// without urfave_cli_no_docs, which drops the generator), by make
// packages; the shipped binaries never have it.
func manPage(app *cli.App) bool {
	if os.Getenv("MITRITY_MANPAGE") == "" {
		return false
	}
	page, err := app.ToManWithSection(1)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: man page: %v\n", app.Name, err)
		os.Exit(1)
	}
	fmt.Fprint(os.Stdout, page)
	return true
}
