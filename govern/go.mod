module github.com/mitrity/mitrity/govern

go 1.26.0

require (
	github.com/goccy/go-yaml v1.19.2
	github.com/google/go-cmp v0.7.0
	github.com/mattn/go-isatty v0.0.24
	github.com/rs/zerolog v1.35.1
	github.com/urfave/cli/v2 v2.27.7
	gotest.tools/v3 v3.5.2
	mvdan.cc/sh/v3 v3.14.1
)

require (
	cel.dev/cel-go v0.33.2 // indirect
	code.dny.dev/ssrf v0.3.0 // indirect
	github.com/coregx/ahocorasick v0.3.1 // indirect
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
