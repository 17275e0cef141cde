module github.com/mitrity/mitrity/govern

go 1.26.0

require (
	github.com/goccy/go-yaml v1.19.2
	github.com/google/go-cmp v0.7.0
	github.com/mattn/go-isatty v0.0.24
	github.com/rs/zerolog v1.35.1
	gotest.tools/v3 v3.5.2
	mvdan.cc/sh/v3 v3.14.1
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
