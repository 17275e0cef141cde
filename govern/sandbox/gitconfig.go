package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// A repository's config can name programs and paths in the worktree
// itself: core.hooksPath = .husky makes .husky/pre-commit a hook,
// core.fsmonitor = ./watch.sh runs watch.sh on every git status. Those
// are as much the metadata git executes from as .git/hooks: configPaths
// finds them so they are held too.

// pathKeys name a path; commandKeys a command whose first word may be
// one ("section.key", or "section.*.key" for any subsection).
var (
	pathKeys    = []string{"core.hookspath", "core.excludesfile", "core.attributesfile", "include.path", "includeif.*.path"}
	commandKeys = []string{
		"core.fsmonitor", "core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.gitproxy",
		"sequence.editor", "gpg.program", "gpg.*.program", "filter.*.clean", "filter.*.smudge", "filter.*.process",
		"diff.*.textconv", "diff.*.command", "merge.*.driver", "credential.helper", "credential.*.helper",
		"uploadpack.packobjectshook", "alias.*",
	}
)

// maxConfigBytes bounds the config read at a run's start.
const maxConfigBytes = 1 << 20

// configPaths returns the paths file (a git config) names by pathKeys and
// commandKeys that resolve inside worktree or below, made absolute
// against it (git runs commands and reads relative paths from the top of
// the worktree; ~ is left alone: a home is not a workspace's to hold).
func configPaths(file, worktree string) []string {
	return readConfigPaths(file, worktree, 0)
}

// maxIncludeDepth is how deep included configs are followed (git allows
// 10; a workspace's own includes are rarely more than one).
const maxIncludeDepth = 3

func readConfigPaths(file, worktree string, depth int) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	section, sub := "", ""
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 64<<10))
	sc.Buffer(make([]byte, 64<<10), maxConfigBytes)
	read := 0
	for sc.Scan() {
		line := sc.Bytes()
		if read += len(line); read > maxConfigBytes {
			break
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section, sub = parseSection(string(line))
			continue
		}
		key, val := parseEntry(string(line))
		if key == "" {
			continue
		}
		name := section + "." + key
		wild := section + ".*." + key
		if sub == "" {
			wild = ""
		}
		match := func(keys []string) bool {
			for _, k := range keys {
				if k == name || k == wild || strings.HasSuffix(k, ".*") && strings.HasPrefix(name, strings.TrimSuffix(k, "*")) {
					return true
				}
			}
			return false
		}
		var p string
		base := worktree
		switch {
		case name == "include.path" || section == "includeif" && key == "path":
			// Relative to the including file, and read in turn.
			base, p = filepath.Dir(file), val
			if p != "" && !strings.HasPrefix(p, "~") && depth < maxIncludeDepth {
				inc := p
				if !filepath.IsAbs(inc) {
					inc = filepath.Join(base, inc)
				}
				out = append(out, readConfigPaths(inc, worktree, depth+1)...)
			}
		case match(pathKeys):
			p = val
		case match(commandKeys):
			p = firstWord(strings.TrimPrefix(strings.TrimSpace(val), "!"))
			if !strings.Contains(p, "/") {
				continue // a name looked up in PATH, not a file of the worktree
			}
		default:
			continue
		}
		if p == "" || strings.HasPrefix(p, "~") {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// parseSection reads "[core]", `[filter "lfs"]` or "[section.sub]" into
// a lower-cased section and its subsection.
func parseSection(line string) (section, sub string) {
	line = strings.TrimPrefix(line, "[")
	if i := strings.IndexByte(line, ']'); i >= 0 {
		line = line[:i]
	}
	if name, rest, ok := strings.Cut(line, " "); ok {
		return strings.ToLower(strings.TrimSpace(name)), strings.Trim(strings.TrimSpace(rest), `"`)
	}
	if name, rest, ok := strings.Cut(line, "."); ok {
		return strings.ToLower(name), rest
	}
	return strings.ToLower(strings.TrimSpace(line)), ""
}

// parseEntry reads "key = value" (a key alone is true), unquoting the
// value and dropping a trailing comment.
func parseEntry(line string) (key, val string) {
	k, v, ok := strings.Cut(line, "=")
	key = strings.ToLower(strings.TrimSpace(k))
	if !ok {
		return key, "true"
	}
	var b strings.Builder
	quoted := false
	v = strings.TrimSpace(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return key, strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return key, strings.TrimSpace(b.String())
}

// firstWord is a command's program as a shell would split it, roughly:
// up to the first blank outside quotes.
func firstWord(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return ""
	}
	if q := cmd[0]; q == '\'' || q == '"' {
		if end := strings.IndexByte(cmd[1:], q); end >= 0 {
			return cmd[1 : 1+end]
		}
	}
	if i := strings.IndexAny(cmd, " \t"); i >= 0 {
		return cmd[:i]
	}
	return cmd
}
