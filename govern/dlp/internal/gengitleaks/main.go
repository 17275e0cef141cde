// Command gengitleaks writes package dlp's gitleaks_rules.go from the
// default rule set of the gitleaks version in govern/go.mod. Run it with
// `go generate ./govern/dlp`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mitrity/mitrity/govern/dlp/internal/gitleaksrules"
)

func main() {
	out := flag.String("o", "gitleaks_rules.go", "file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gengitleaks:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	rules, global, err := gitleaksrules.Load()
	if err != nil {
		return err
	}
	version, err := gitleaksrules.Version()
	if err != nil {
		return err
	}
	src, err := gitleaksrules.Source(version, rules, global)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
