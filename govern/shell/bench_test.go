package shell

import (
	"strconv"
	"strings"
	"testing"
)

func benchInput(text string) Input {
	return Input{Text: text, Dialect: DialectBash, Cwd: "/work", Path: []string{"/usr/local/bin", "/usr/bin", "/bin"},
		Home: "/home/agent", InspectionRoots: []string{"/work"}, WritableRoots: []string{"/work"}, CredentialVars: []string{"GITHUB_TOKEN"}}
}

func benchAnalyze(b *testing.B, text string) {
	in := benchInput(text)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if a := Analyze(in); a.Denial != nil {
			b.Fatal(a.Denial)
		}
	}
}

// BenchmarkAnalyze/oneline: target under 50 µs per command.
// BenchmarkAnalyze/script64k: target under 20 ms.
func BenchmarkAnalyze(b *testing.B) {
	b.Run("oneline", func(b *testing.B) {
		benchAnalyze(b, `git commit -m "fix: handle empty input" && git push origin HEAD`)
	})
	b.Run("oneline_wrapped", func(b *testing.B) {
		benchAnalyze(b, `sudo -u build env GOFLAGS=-mod=mod timeout 30 go test ./...`)
	})
	b.Run("pipeline50", func(b *testing.B) {
		parts := make([]string, 50)
		for i := range parts {
			parts[i] = "grep -v pattern" + strings.Repeat("x", i%5)
		}
		benchAnalyze(b, "cat build.log | "+strings.Join(parts, " | "))
	})
	b.Run("script64k", func(b *testing.B) {
		benchAnalyze(b, script64k())
	})
}

// script64k builds a realistic ~64 KiB bash script: functions, loops,
// conditionals, pipelines, here-documents and substitutions.
func script64k() string {
	const chunk = "\nbuild_N() {\n" +
		"\tlocal out=\"${1:-dist}\" n=0\n" +
		"\tfor f in src/*.go; do\n" +
		"\t\tif [[ -f \"$f\" ]]; then\n" +
		"\t\t\tn=$((n + 1))\n" +
		"\t\t\tgofmt -l \"$f\" | tee -a \"$out/fmt.log\" >/dev/null\n" +
		"\t\tfi\n" +
		"\tdone\n" +
		"\tcase \"$MODE\" in\n" +
		"\t\trelease) go build -trimpath -o \"$out/app\" ./cmd/app ;;\n" +
		"\t\t*) go build -o \"$out/app\" ./cmd/app ;;\n" +
		"\tesac\n" +
		"\tcat > \"$out/VERSION\" <<END\n" +
		"version=$(git describe --tags --always)\n" +
		"END\n" +
		"\techo \"built $n files\" >&2\n" +
		"}\n" +
		"build_N dist\n"
	var b strings.Builder
	b.WriteString("#!/bin/bash\nset -euo pipefail\nMODE=release\n")
	for i := 0; b.Len() < MaxCommandBytes-len(chunk)-16; i++ {
		b.WriteString(strings.ReplaceAll(chunk, "build_N", "build_"+strconv.Itoa(i)))
	}
	return b.String()
}
