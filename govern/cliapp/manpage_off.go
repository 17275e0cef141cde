//go:build !mitrity_manpage

package cliapp

import "github.com/urfave/cli/v2"

// manPage is false: only the man-page build (tag mitrity_manpage, see
// manpage.go) writes pages; shipped binaries carry no generator.
func manPage(*cli.App) bool { return false }
