package shell

import (
	"runtime"
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
			allocs, bytes := allocated(func() { a = Analyze(benchInput(text)) })
			// The parse is most of it: about 10 allocations per byte.
			assert.Assert(t, allocs < 40*uint64(len(text)), "%d allocations for %d bytes", allocs, len(text))
			assert.Assert(t, raceEnabled || bytes < 1000*uint64(len(text)), "%d bytes allocated for %d bytes", bytes, len(text))
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

// TestRepeatedCodeBounded: code parsed again and again (eval, sh -c and
// alias expansions of one large value) stops at maxNestedBytes, opaque;
// a value doubled by x=$x$x stops being known past maxValueBytes; and
// expanding a large known value in every command stops at maxExpandBytes.
// Each is held to a number of allocations proportional to the text.
func TestRepeatedCodeBounded(t *testing.T) {
	big := strings.Repeat("a", 30000)
	for _, c := range []struct {
		name, text string
		flag       FlagKind
	}{
		{"eval", "x='echo \"" + big + "\"'\n" + strings.Repeat("eval \"$x\"\n", 3300), FlagDepthExceeded},
		{"sh -c", "x='echo \"" + big + "\"'\n" + strings.Repeat("sh -c \"$x\"\n", 3000), FlagDepthExceeded},
		{"alias", "shopt -s expand_aliases\nalias c='echo \"" + big + "\"'\n" + strings.Repeat("c\n", 16000), FlagDepthExceeded},
		{"doubling", "x=aaaaaaaa\n" + strings.Repeat("x=$x$x\n", 40) + "$x", FlagDynamicCommand},
		{"expanding", "x=aaaaaaaa\n" + strings.Repeat("x=$x$x\n", 13) + strings.Repeat(": \"$x\"\n", 7000) + "$x", FlagDynamicCommand},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Assert(t, len(c.text) <= MaxCommandBytes)
			var a *Analysis
			allocs, bytes := allocated(func() { a = Analyze(benchInput(c.text)) })
			assert.Assert(t, hasFlag(a, c.flag), "%d flags, none %s", len(a.Flags), c.flag)
			assert.Assert(t, a.Opaque())
			assert.Assert(t, allocs < 40*uint64(len(c.text)), "%d allocations for %d bytes", allocs, len(c.text))
			assert.Assert(t, raceEnabled || bytes < 1000*uint64(len(c.text))+4<<20, "%d bytes allocated for %d bytes", bytes, len(c.text))
		})
	}
}

// allocated counts what fn allocates: objects and bytes (deterministic for
// a given input and toolchain, unlike time).
func allocated(fn func()) (allocs, bytes uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// TestLoopWalksBounded: loops are walked again until their variables stop
// changing (loop), and loops inside loops multiply that: 64 KiB of nested
// loops whose bodies keep changing variables stays within a bounded number
// of allocations and is opaque past maxLoopRewalks, denied in a run that
// carries a credential; the same loops one after another, each settling in
// a few walks, are walked whole and not opaque.
func TestLoopWalksBounded(t *testing.T) {
	body := "x=$y; y=$z; z=$RANDOM; "
	nested := nestText(func(n int) string {
		return strings.Repeat("for i in 1 2; do "+body, n) + "true" + strings.Repeat("; done", n)
	})
	flat := nestText(func(n int) string { return strings.Repeat("for i in 1 2; do "+body+"true; done; ", n) })
	for _, c := range []struct {
		name, text string
		opaque     bool
	}{{"nested", nested, true}, {"one after another", flat, false}} {
		t.Run(c.name, func(t *testing.T) {
			var a *Analysis
			allocs, _ := allocated(func() { a = Analyze(benchInput(c.text)) })
			assert.Assert(t, allocs < 40*uint64(len(c.text)), "%d allocations for %d bytes", allocs, len(c.text))
			assert.Equal(t, a.Opaque(), c.opaque, "flags %v", a.Flags)
			if !c.opaque {
				return
			}
			in := benchInput(c.text)
			in.CredentialsInjected = true
			d := Analyze(in).Denial
			assert.Assert(t, d != nil && d.Reason == "credential_in_argv", "%v", d)
		})
	}
}
