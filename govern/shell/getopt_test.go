package shell

import (
	"strings"
	"testing"
)

// render shows what a scan or parse read: the options (an argument after
// '=', * when it is dynamic, the id in parentheses when it is not the
// option's name), then "|" and the operands, then "?" and the unknown
// words, or "!" and the error.
func render(opts []option, operands, unknown []Word, err string) string {
	var b strings.Builder
	word := func(w Word) {
		b.WriteString(w.Value)
		if w.Dynamic {
			b.WriteByte('*')
		}
	}
	for _, o := range opts {
		b.WriteString(o.String())
		if o.id != o.name {
			b.WriteString("(" + o.id + ")")
		}
		if o.hasArg {
			b.WriteByte('=')
			word(o.arg)
		}
		b.WriteByte(' ')
	}
	b.WriteByte('|')
	for _, w := range operands {
		b.WriteByte(' ')
		word(w)
	}
	if len(unknown) > 0 {
		b.WriteString(" ?")
		for _, w := range unknown {
			b.WriteByte(' ')
			word(w)
		}
	}
	if err != "" {
		b.WriteString(" ! " + err)
	}
	return b.String()
}

func scanAll(g *getopt, args []Word) string {
	s := g.scan(args)
	var opts []option
	for {
		o, ok := s.next()
		if !ok {
			break
		}
		opts = append(opts, o)
	}
	if s.err != "" {
		return render(opts, nil, nil, s.err)
	}
	return render(opts, s.rest(), nil, "")
}

var (
	testGetopt = getopt{short: "+ab:c::", long: longs("all=a", "both=a", "bytes:=b", "color::=c",
		"to-command:", "totals::", "touch")}
	testPermute = getopt{short: "ab:", long: longs("all=a", "bytes:=b")}
	testExact   = getopt{short: "+e:", long: longs("eval:", "evil"), exact: true}
)

func TestGetoptScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		g    *getopt
		args string
		want string
	}{
		{&testGetopt, "", "|"},
		{&testGetopt, "x -a", "| x -a"}, // '+': the first operand ends the options
		{&testGetopt, "-a -b 1 x", "-a -b=1 | x"},
		{&testGetopt, "-ab1 x", "-a -b=1 | x"},
		{&testGetopt, "-ab -a", "-a -b=-a |"}, // an argument may look like an option
		{&testGetopt, "-ba", "-b=a |"},
		{&testGetopt, "-b", "| ! option -b needs an argument"},
		{&testGetopt, "-ac5 x", "-a -c=5 | x"},
		{&testGetopt, "-c 5", "-c | 5"}, // an optional argument is attached or absent
		{&testGetopt, "-ax", "-a | ! unknown option -x"},
		{&testGetopt, "-a: x", "-a | ! unknown option -:"},
		{&testGetopt, "-+", "| ! unknown option -+"},
		{&testGetopt, "-- -a", "| -a"},
		{&testGetopt, "- -a", "| - -a"},
		{&testGetopt, "--all --bytes=1 --bytes 2 x", "--all(a) --bytes(b)=1 --bytes(b)=2 | x"},
		{&testGetopt, "--bytes=", "--bytes(b)= |"},
		{&testGetopt, "--bytes", "| ! option --bytes needs an argument"},
		{&testGetopt, "--bytes --all", "--bytes(b)=--all |"},
		{&testGetopt, "--color x", "--color(c) | x"}, // an optional argument only with =
		{&testGetopt, "--color=always", "--color(c)=always |"},
		{&testGetopt, "--all=1", "| ! option --all takes no argument"},
		{&testGetopt, "--by 1", "--bytes(b)=1 |"}, // an abbreviation
		{&testGetopt, "--to-c=id", "--to-command=id |"},
		{&testGetopt, "--to=id", "| ! ambiguous option --to"},
		{&testGetopt, "--tou", "--touch |"},
		{&testGetopt, "--b", "| ! ambiguous option --b"},
		{&testGetopt, "--al", "--all(a) |"},
		{&testGetopt, "--a", "--all(a) |"}, // --all and --both are one option
		{&testGetopt, "--frob", "| ! unknown option --frob"},
		{&testGetopt, "--=x", "| ! ambiguous option --"},
		{&testGetopt, "---a", "| ! unknown option ---a"},
		{&testGetopt, "-b $X x", "-b=$X* | x"}, // a dynamic argument is fine
		{&testGetopt, "--bytes=$X", "| ! dynamic word --bytes=$X where an option may stand"},
		{&testGetopt, "-a $X", "-a | ! dynamic word $X where an option may stand"},
		{&testGetopt, "-a x$X", "-a | ! dynamic word x$X where an option may stand"},
		{&testPermute, "x -a y -b1 z", "-a -b=1 | x y z"},
		{&testPermute, "x -- -a y", "| x -a y"},
		{&testPermute, "-b -- x", "-b=-- | x"},
		{&testPermute, "x - -a", "-a | x -"},
		{&testPermute, "x $X", "| ! dynamic word $X where an option may stand"},
		{&testExact, "--eval x", "--eval=x |"},
		{&testExact, "--eva x", "| ! unknown option --eva"},
		{&testExact, "--e", "| ! unknown option --e"},
	}
	for _, tc := range tests {
		if got := scanAll(tc.g, testArgv(tc.args)); got != tc.want {
			t.Errorf("scan %q (%q):\n got %s\nwant %s", tc.args, tc.g.short, got, tc.want)
		}
	}
}

var (
	testPython = getopt{short: "+c:m:", long: longs("check-hash-based-pycs:", "help"), exact: true, stop: set("c", "m")}
	testAwk    = getopt{short: "+E:v:", long: longs("exec:", "assign:=v"), stop: set("E", "exec")}
	testPerl   = getopt{short: "+e:", attached: map[byte]func(string) int{'l': takeSet("01234567"), 'i': takeAll}}
)

func TestGetoptParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		g    *getopt
		args string
		want string
	}{
		{&testGetopt, "-a -b 1 x -a", "-a -b=1 | x -a"},
		{&testGetopt, "-xb1", "-x -b=1 |"},                         // an unknown letter is a flag
		{&testGetopt, "-b", "-b |"},                                // a missing argument is none
		{&testGetopt, "--frob=1 --all=2", "--frob=1 --all(a)=2 |"}, // and an argument nobody takes is one
		{&testGetopt, "--to id", "--to-command=id --totals=id --touch=id |"},
		{&testGetopt, "--tot=x", "--totals=x |"},
		{&testGetopt, "--b 1", "--both(a)=1 --bytes(b)=1 |"}, // the argument one of them takes
		{&testGetopt, "--tot x", "--totals | x"},             // an optional argument only with =
		{&testGetopt, "--a 1", "--all(a) | 1"},
		{&testGetopt, "--=x", "--=x |"},
		{&testGetopt, "-- -a", "| -a"},
		// Dynamic words are read as far as their text is known.
		{&testGetopt, `-b"$X" x`, `-b="$X"* | x`},
		{&testGetopt, `-a"$X" x`, `-a | x ? -a"$X"*`},
		{&testGetopt, `-"$X" x`, `| x ? -"$X"*`},
		{&testGetopt, `--to-command=$X`, `--to-command=$X* |`},
		{&testGetopt, `--to$X=1 x`, `| x ? --to$X=1*`},
		{&testGetopt, `--$X x`, `| x ? --$X*`},
		{&testGetopt, `$X -a`, `| $X* -a ? $X*`},
		{&testGetopt, `"$X" -a`, `| "$X"* -a ? "$X"*`},
		{&testGetopt, `./$X -a`, `| ./$X* -a`},
		{&testGetopt, `x$X -a`, `| x$X* -a`},
		{&testPermute, `x $X -a y`, `-a | x $X* y ? $X*`},
		{&testPermute, `x -- $X`, `| x $X*`},
		{&testExact, "--eva x", "--eva | x"},
		{&testPython, "-c code -x", "-c=code | -x"},
		{&testPython, "-ccode -x", "-c=code | -x"},
		{&testPython, "--c code", "--c | code"},
		{&testPython, "-m mod -c x", "-m=mod | -c x"},
		{&testAwk, "--ex f -v x", "--exec=f | -v x"},
		{&testAwk, "--as=x -Ef -v x", "--assign(v)=x -E=f | -v x"},
		{&testPerl, "-l0ne code x", "-l=0 -n -e=code | x"},
		{&testPerl, "-lie x", "-l -i=e | x"},
		{&testPerl, `-i"$X" x`, `-i | x ? -i"$X"*`},
	}
	for _, tc := range tests {
		p := tc.g.parse(testArgv(tc.args))
		if got := render(p.opts, p.operands, p.unknown, ""); got != tc.want {
			t.Errorf("parse %q (%q):\n got %s\nwant %s", tc.args, tc.g.short, got, tc.want)
		}
	}
}

func TestParsedHas(t *testing.T) {
	t.Parallel()
	p := testGetopt.parse(testArgv("--both --bytes=1"))
	if !p.has("x", "a") || !p.has("b") || p.has("both", "bytes", "c") {
		t.Fatalf("has: ids are a and b: %+v", p.opts)
	}
}

// TestGetoptCursor covers what wrappers do between options: sudo's look
// back, nice's legacy words, env -S.
func TestGetoptCursor(t *testing.T) {
	t.Parallel()
	s := testGetopt.scan(testArgv("-a VAR=1 -b -- x"))
	if _, ok := s.prev(); ok {
		t.Fatal("prev before the first word")
	}
	if o, ok := s.next(); !ok || o.id != "a" {
		t.Fatalf("next = %v, %v", o, ok)
	}
	if w, ok := s.prev(); !ok || w.Value != "-a" {
		t.Fatalf("prev = %v, %v", w, ok)
	}
	if _, ok := s.next(); ok {
		t.Fatal("an operand is not an option")
	}
	if w, ok := s.peek(); !ok || w.Value != "VAR=1" {
		t.Fatalf("peek = %v, %v", w, ok)
	}
	s.skip()
	s.splice(testArgv("-ab1 y"))
	var got []string
	for {
		o, ok := s.next()
		if !ok {
			break
		}
		got = append(got, o.String()+"="+o.arg.Value)
		if _, ok := s.peek(); ok != (s.sub == 0) {
			t.Fatalf("peek inside a cluster")
		}
	}
	if want := "-a= -b=1"; strings.Join(got, " ") != want {
		t.Fatalf("after splice: %q, want %q", got, want)
	}
	if w, _ := s.prev(); w.Value != "-ab1" {
		t.Fatalf("prev = %v", w)
	}
	if rest := render(nil, s.rest(), nil, ""); rest != "| y -b -- x" {
		t.Fatalf("rest: %s", rest)
	}
	s = testGetopt.scan(testArgv("-- x"))
	if _, ok := s.next(); ok {
		t.Fatal("-- is not an option")
	}
	if _, ok := s.peek(); ok {
		t.Fatal("peek after --")
	}
	if w, _ := s.prev(); w.Value != "--" {
		t.Fatalf("prev = %v", w)
	}
}
