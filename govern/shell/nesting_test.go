package shell

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// nestShapes build n levels of each kind of nesting the walker recurses
// into. Each level is a statement inside the one around it.
var nestShapes = []struct {
	name string
	mk   func(n int) string
	// flat: the walk never goes deep (a function body defining a
	// function is walked one level at a time), so only the cost is checked.
	flat bool
}{
	{"cmdsubst", func(n int) string { return strings.Repeat("$(", n) + "true" + strings.Repeat(")", n) }, false},
	{"cmdsubst_quoted", func(n int) string { return strings.Repeat(`"$(echo `, n) + "a" + strings.Repeat(`)"`, n) }, false},
	{"procsubst", func(n int) string { return "cat " + strings.Repeat("<(cat ", n) + "x" + strings.Repeat(")", n) }, false},
	{"subshell", func(n int) string { return strings.Repeat("( ", n) + "true" + strings.Repeat(" )", n) }, false},
	{"brace", func(n int) string { return strings.Repeat("{ ", n) + "true" + strings.Repeat("; }", n) }, false},
	{"if", func(n int) string { return strings.Repeat("if true; then ", n) + "true" + strings.Repeat("; fi", n) }, false},
	{"while", func(n int) string { return strings.Repeat("while true; do ", n) + "true" + strings.Repeat("; done", n) }, false},
	{"function", func(n int) string { return strings.Repeat("f(){ ", n) + "true" + strings.Repeat("; }", n) }, true},
	{"param_default", func(n int) string { return "echo " + strings.Repeat("${x:-$(echo ", n) + "a" + strings.Repeat(")}", n) }, false},
	{"arith_subst", func(n int) string { return "echo " + strings.Repeat("$(( $(echo 1", n) + strings.Repeat(") ))", n) }, false},
}

// nestText fills most of the 64 KiB limit with one shape.
func nestText(mk func(int) string) string {
	n := 1
	for len(mk(n*2)) <= MaxCommandBytes {
		n *= 2
	}
	for step := n / 2; step > 0; step /= 2 {
		if len(mk(n+step)) <= MaxCommandBytes {
			n += step
		}
	}
	return mk(n)
}

// TestNestingBounded: nesting past maxNesting is opaque (depth_exceeded,
// which a run that carries a credential denies), the walk stops there, and
// 64 KiB of any shape costs a bounded number of allocations: before the
// bound, 64 KiB of $( took tens of seconds and gigabytes, each level
// copying the context, details and words of all the levels around it.
func TestNestingBounded(t *testing.T) {
	for _, s := range nestShapes {
		t.Run(s.name, func(t *testing.T) {
			within := Analyze(benchInput(s.mk(maxNesting / 2)))
			assert.Assert(t, !hasFlag(within, FlagDepthExceeded), "%d levels must be walked", maxNesting/2)

			if !s.flat {
				deep := Analyze(benchInput(s.mk(3 * maxNesting)))
				assert.Assert(t, hasFlag(deep, FlagDepthExceeded), "%d levels: %d flags, none depth_exceeded", 3*maxNesting, len(deep.Flags))
			}

			text := nestText(s.mk)
			var a *Analysis
			allocs := testing.AllocsPerRun(1, func() { a = Analyze(benchInput(text)) })
			// The parse is most of it: about 10 allocations per byte.
			assert.Assert(t, allocs < 40*float64(len(text)), "%.0f allocations for %d bytes", allocs, len(text))
			if s.flat {
				return
			}
			assert.Assert(t, hasFlag(a, FlagDepthExceeded), "%d bytes: %d flags, none depth_exceeded", len(text), len(a.Flags))
			assert.Assert(t, a.Opaque())
			assert.Assert(t, len(a.Commands) <= 2*maxNesting, "%d commands listed", len(a.Commands))

			in := benchInput(text)
			in.CredentialsInjected = true
			d := Analyze(in).Denial
			assert.Assert(t, d != nil && d.Reason == "credential_in_argv", "%v", d)
		})
	}
}

// BenchmarkNesting: 64 KiB of each nesting shape; bounded like the rest of
// BenchmarkAnalyze (under 20 ms).
func BenchmarkNesting(b *testing.B) {
	for _, s := range nestShapes {
		text := nestText(s.mk)
		b.Run(s.name, func(b *testing.B) {
			in := benchInput(text)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				Analyze(in)
			}
		})
	}
}
