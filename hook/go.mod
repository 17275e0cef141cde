module github.com/mitrity/mitrity/hook

go 1.26.0

require (
	github.com/pelletier/go-toml/v2 v2.2.3
	github.com/urfave/cli/v2 v2.27.7
	gotest.tools/v3 v3.5.2
)

require (
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/rs/zerolog v1.35.1 // indirect
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mitrity/mitrity/admission v0.0.0
	github.com/mitrity/mitrity/govern v0.0.0
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/mitrity/mitrity/govern => ../govern

replace github.com/mitrity/mitrity/admission => ../admission
