module github.com/mitrity/mitrity/admission

go 1.26

require (
	github.com/google/go-cmp v0.7.0
	gotest.tools/v3 v3.5.2
)
