package sandbox

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fakeHost is a file system for the planner: directories end in "/".
func fakeHost(paths ...string) func(string) pathInfo {
	return func(p string) pathInfo {
		for _, x := range paths {
			if strings.TrimSuffix(x, "/") == p {
				return pathInfo{Real: p, Exists: true, Dir: strings.HasSuffix(x, "/")}
			}
		}
		return pathInfo{Real: filepath.Clean(p)}
	}
}

func TestPlanNarrowing(t *testing.T) {
	t.Parallel()
	host := fakeHost("/home/", "/home/u/", "/home/u/proj/", "/home/u/proj/secrets/", "/home/u/proj/.env",
		"/home/u/proj/src/", "/home/u/proj/src/gen/", "/home/shared/", "/home/shared/private/", "/srv/", "/srv/data.db", "/tmp/", "/opt/")
	roots := []string{"/home/u/proj"}
	for _, tc := range []struct {
		name string
		n    Narrowing
		want narrowPlan
	}{
		{"nothing", Narrowing{}, narrowPlan{}},
		{
			"deny reads: a root inside stays reachable, relative paths name the root's, ~ the home",
			Narrowing{DenyRead: []string{"/home", "secrets", "/srv/data.db", "~/.ssh", "/nowhere", "/tmp"}},
			narrowPlan{
				covers: []CoverOp{{Path: "/home"}},
				masks:  []Mask{{Path: "/home/u/proj/secrets", Dir: true}, {Path: "/srv/data.db"}},
			},
		},
		{
			"allow reads carve into denies outside the roots, the more specific path winning",
			Narrowing{DenyRead: []string{"/home", "/home/shared/private", "/srv"}, AllowRead: []string{"/home/shared", "/home/u/proj/src", "/opt"}},
			narrowPlan{
				covers: []CoverOp{{Path: "/home"}, {Path: "/home/shared", Reveal: true}},
				masks:  []Mask{{Path: "/home/shared/private", Dir: true}, {Path: "/srv", Dir: true}},
				notes:  []string{"settings allowRead /home/u/proj/src is inside a workspace root: ignored"},
			},
		},
		{
			"allow writes intersect the roots",
			Narrowing{LimitWrite: true, AllowWrite: []string{"src", "/srv", "/home/u/proj/build"}},
			narrowPlan{
				roRoots:    []string{"/home/u/proj"},
				writeBinds: []string{"/home/u/proj/src"},
				notes: []string{
					"settings allowWrite /srv is outside every workspace root: ignored (the host there is read-only)",
					"settings allowWrite /home/u/proj/build does not exist: it stays uncreatable (creating it would write to the host)",
				},
			},
		},
		{"an allowWrite holding the root keeps it writable", Narrowing{LimitWrite: true, AllowWrite: []string{"/home/u"}}, narrowPlan{}},
		{"an empty allowWrite leaves nothing writable", Narrowing{LimitWrite: true}, narrowPlan{roRoots: []string{"/home/u/proj"}}},
		{
			"deny writes win over allow writes",
			Narrowing{LimitWrite: true, AllowWrite: []string{"src", "."}, DenyWrite: []string{".env", "src/gen", "config/prod.json", "/srv"}},
			narrowPlan{readOnly: []string{"/home/u/proj/.env", "/home/u/proj/src/gen"}, absent: []string{"/home/u/proj/config/prod.json"}},
		},
		{"a deny write holding the root makes it read-only", Narrowing{DenyWrite: []string{"~"}}, narrowPlan{roRoots: []string{"/home/u/proj"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := planNarrowing(&tc.n, roots, "/home/u", host)
			assert.NilError(t, err)
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(narrowPlan{})); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
	_, err := planNarrowing(&Narrowing{DenyRead: []string{"~/.aws"}}, roots, "", host)
	assert.ErrorContains(t, err, "no home directory")
}

func TestHiddenByCovers(t *testing.T) {
	t.Parallel()
	p := narrowPlan{covers: []CoverOp{{Path: "/home"}, {Path: "/home/shared", Reveal: true}, {Path: "/home/shared/x"}}}
	roots := []string{"/home/u/proj"}
	for path, want := range map[string]bool{
		"/home/v/run.sh": true, "/home/u/proj/run.sh": false, "/home/shared/run.sh": false,
		"/home/shared/x/run.sh": true, "/opt/run.sh": false,
	} {
		assert.Check(t, is.Equal(p.hiddenByCovers(path, roots), want), path)
	}
}

func TestHomeOf(t *testing.T) {
	t.Parallel()
	pw := []byte("root:x:0:0:root:/root:/bin/bash\nu:x:1000:1000::/home/u/:/bin/sh\nbad line\n")
	assert.Check(t, is.Equal(homeOf(pw, 0), "/root"))
	assert.Check(t, is.Equal(homeOf(pw, 1000), "/home/u"))
	assert.Check(t, is.Equal(homeOf(pw, 7), ""))
}
