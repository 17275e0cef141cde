module github.com/mitrity/mitrity/admission

go 1.26
