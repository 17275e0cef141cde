package audit

import (
	"testing"
)

// BenchmarkBuild is the event of one completed shell call (a script with
// three resolved commands, a pinned script, egress and limits), scrubbed
// of ten credential values the gateway holds: the build every call pays
// before its event is written.
func BenchmarkBuild(b *testing.B) {
	secrets := map[string]string{}
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		secrets["cred_"+id] = "Zq8vK2mPx7Rt4LwN9bYc3HdJ6fGs1Ae" + id
	}
	t := &testing.T{}
	scrub := scrubOf(t, secrets)
	bld := testBuilder()
	for _, tc := range []struct {
		name string
		r    func() Record
	}{
		{"completed", completedRecord},
		{"denied", policyDeniedRecord},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := tc.r()
			r.Scrub = scrub
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bld.Build(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
