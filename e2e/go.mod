module github.com/mitrity/mitrity/e2e

go 1.26
