package inject

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestZZShellCorpus(t *testing.T) {
	files, _ := filepath.Glob("../shell/testdata/corpus/*.yaml")
	n, hit := 0, 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var cases []struct {
			Cmd   string `yaml:"cmd"`
			Stdin string `yaml:"stdin"`
			Files map[string]string `yaml:"files"`
		}
		if err := yaml.Unmarshal(b, &cases); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			texts := []string{c.Cmd, c.Stdin}
			for _, v := range c.Files {
				texts = append(texts, v)
			}
			for _, x := range texts {
				if x == "" {
					continue
				}
				n++
				if got := Scan(x); len(got) > 0 {
					hit++
					t.Logf("%s: %q: %v", filepath.Base(f), x, got)
				}
			}
		}
	}
	t.Logf("%d of %d", hit, n)
}
