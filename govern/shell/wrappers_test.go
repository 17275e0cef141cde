package shell

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// In these tables a word starting with "$" is dynamic (its value is the
// source text); every other word is static.
func ws(ss ...string) []Word {
	out := make([]Word, len(ss))
	for i, s := range ss {
		out[i] = Word{Value: s, Dynamic: strings.HasPrefix(s, "$")}
	}
	return out
}

// wsInner is one inner argv.
func wsInner(ss ...string) [][]Word { return [][]Word{ws(ss...)} }

// dynWord is a word the wrapper makes dynamic (xargs -I, find's {}).
func dynWord(s string) Word { return Word{Value: s, Dynamic: true} }

func litWord(s string) Word { return Word{Value: s} }
func ref(s string) *Word    { return &Word{Value: s} }
func dynRef(s string) *Word { return &Word{Value: s, Dynamic: true} }

func TestUnwrap(t *testing.T) {
	t.Parallel()
	const (
		execdirDir = "(directory of each file found)"
		pkexecHome = "~ (home of the target user)"
		targetMnt  = "(mount namespace of the target)"
	)
	tests := []struct {
		name string
		argv []string
		want unwrapped
		ok   bool
	}{
		// Not wrappers.
		{"plain command", []string{"ls", "-l"}, unwrapped{}, false},
		{"dynamic argv0", []string{"$X", "sudo"}, unwrapped{}, false},
		{"empty argv", nil, unwrapped{}, false},
		{"shell is not a wrapper", []string{"sh", "-c", "id"}, unwrapped{}, false},
		{"trailing slash", []string{"/usr/bin/"}, unwrapped{}, false},
		{"basename match", []string{"/usr/bin/sudo", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("ls")}, true},

		// command, builtin, exec (bash builtins).
		{"command runs", []string{"command", "ls", "-l"}, unwrapped{Wrapper: "command", Inners: wsInner("ls", "-l")}, true},
		{"command -p", []string{"command", "-p", "ls"}, unwrapped{Wrapper: "command", Inners: wsInner("ls")}, true},
		{"command -v queries", []string{"command", "-v", "rm", "-rf", "/"}, unwrapped{Wrapper: "command"}, true},
		{"command -pV queries", []string{"command", "-pV", "rm"}, unwrapped{Wrapper: "command"}, true},
		{"command --", []string{"command", "--", "-x"}, unwrapped{Wrapper: "command", Inners: wsInner("-x")}, true},
		{"command dash operand", []string{"command", "-", "x"}, unwrapped{Wrapper: "command", Inners: wsInner("-", "x")}, true},
		{"command --help", []string{"command", "-p", "--help", "rm"}, unwrapped{Wrapper: "command"}, true},
		{"command unknown option", []string{"command", "-x", "ls"}, unwrapped{Wrapper: "command", Opaque: "unknown option -x"}, true},
		{"command dynamic option", []string{"command", "$O", "ls"}, unwrapped{Wrapper: "command", Opaque: "dynamic word $O where an option may stand"}, true},
		{"command alone", []string{"command"}, unwrapped{Wrapper: "command"}, true},
		{"builtin", []string{"builtin", "echo", "hi"}, unwrapped{Wrapper: "builtin", Inners: wsInner("echo", "hi")}, true},
		{"builtin --", []string{"builtin", "--", "cd", "/tmp"}, unwrapped{Wrapper: "builtin", Inners: wsInner("cd", "/tmp")}, true},
		{"builtin option", []string{"builtin", "-x", "echo"}, unwrapped{Wrapper: "builtin", Opaque: "unknown option -x"}, true},
		{"exec -a --", []string{"exec", "-a", "foo", "--", "sh", "-c", "x"}, unwrapped{Wrapper: "exec", Inners: wsInner("sh", "-c", "x")}, true},
		{"exec -cla", []string{"exec", "-cla", "name", "prog"}, unwrapped{Wrapper: "exec", ClearEnv: true, Inners: wsInner("prog")}, true},
		{"exec -aNAME", []string{"exec", "-afoo", "ls"}, unwrapped{Wrapper: "exec", Inners: wsInner("ls")}, true},
		{"exec redirections only", []string{"exec"}, unwrapped{Wrapper: "exec"}, true},
		{"exec -a missing", []string{"exec", "-a"}, unwrapped{Wrapper: "exec", Opaque: "option -a needs an argument"}, true},
		{"exec dynamic command", []string{"exec", "--", "$CMD", "x"}, unwrapped{Wrapper: "exec", Inners: wsInner("$CMD", "x")}, true},

		// env.
		{"env -i with dangerous assigns", []string{"env", "-i", "PATH=/x", "LD_PRELOAD=/tmp/x.so", "ls"},
			unwrapped{Wrapper: "env", ClearEnv: true, Assigns: ws("PATH=/x", "LD_PRELOAD=/tmp/x.so"), Inners: wsInner("ls")}, true},
		{"env -S splits", []string{"env", "-S", "rm -rf /"}, unwrapped{Wrapper: "env", Inners: wsInner("rm", "-rf", "/")}, true},
		{"env -u missing", []string{"env", "-u"}, unwrapped{Wrapper: "env", Opaque: "option -u needs an argument"}, true},
		{"env -u and -C", []string{"env", "-u", "HOME", "-C", "/tmp", "./x.sh"},
			unwrapped{Wrapper: "env", Unsets: []string{"HOME"}, Chdir: ref("/tmp"), Inners: wsInner("./x.sh")}, true},
		{"env dash clears", []string{"env", "-", "FOO=1", "id"}, unwrapped{Wrapper: "env", ClearEnv: true, Assigns: ws("FOO=1"), Inners: wsInner("id")}, true},
		{"env alone prints", []string{"env"}, unwrapped{Wrapper: "env"}, true},
		{"env assigns only", []string{"env", "FOO=1"}, unwrapped{Wrapper: "env", Assigns: ws("FOO=1")}, true},
		{"env --split-string options", []string{"env", "--split-string=-i FOO=1 sh -c id"},
			unwrapped{Wrapper: "env", ClearEnv: true, Assigns: ws("FOO=1"), Inners: wsInner("sh", "-c", "id")}, true},
		{"env abbreviated --split", []string{"env", "--sp=x y", "z"}, unwrapped{Wrapper: "env", Inners: wsInner("x", "y", "z")}, true},
		{"env -iS cluster quotes", []string{"env", `-iSecho "a b"`, "c"}, unwrapped{Wrapper: "env", ClearEnv: true, Inners: wsInner("echo", "a b", "c")}, true},
		{"env -S nested -S", []string{"env", `-S-u HOME -S "rm -rf /"`}, unwrapped{Wrapper: "env", Unsets: []string{"HOME"}, Inners: wsInner("rm", "-rf", "/")}, true},
		{"env -S comment", []string{"env", "-S", "cmd # rm -rf /"}, unwrapped{Wrapper: "env", Inners: wsInner("cmd")}, true},
		{"env -S separator escape", []string{"env", "-S", `sh\_-c\_id`}, unwrapped{Wrapper: "env", Inners: wsInner("sh", "-c", "id")}, true},
		{"env -S \\c ends", []string{"env", "-S", `ls \c rm -rf /`}, unwrapped{Wrapper: "env", Inners: wsInner("ls")}, true},
		{"env -S variable", []string{"env", "-S", "x${HOME}"}, unwrapped{Wrapper: "env", Opaque: "-S: ${NAME} expands from the environment"}, true},
		{"env -S unterminated", []string{"env", "-S", "a 'b"}, unwrapped{Wrapper: "env", Opaque: "-S: no terminating quote"}, true},
		{"env -S bad escape", []string{"env", "-S", `a\qb`}, unwrapped{Wrapper: "env", Opaque: `-S: invalid sequence '\q'`}, true},
		{"env -S dynamic", []string{"env", "-S", "$X"}, unwrapped{Wrapper: "env", Opaque: "dynamic -S string $X"}, true},
		{"env dynamic option", []string{"env", "$X", "ls"}, unwrapped{Wrapper: "env", Opaque: "dynamic word $X where an option may stand"}, true},
		{"env dynamic after --", []string{"env", "--", "$CMD"}, unwrapped{Wrapper: "env", Opaque: "dynamic word $CMD where NAME=VALUE or the command may stand"}, true},
		{"env unknown option", []string{"env", "--frob", "ls"}, unwrapped{Wrapper: "env", Opaque: "unknown option --frob"}, true},
		{"env unique abbreviation", []string{"env", "--u=X", "ls"}, unwrapped{Wrapper: "env", Unsets: []string{"X"}, Inners: wsInner("ls")}, true},
		{"env ambiguous abbreviation", []string{"env", "--i", "ls"}, unwrapped{Wrapper: "env", Opaque: "ambiguous option --i"}, true},
		{"env -0 with command", []string{"env", "-0", "ls"}, unwrapped{Wrapper: "env", Opaque: "-0 cannot be used with a command"}, true},
		{"env -C without command", []string{"env", "-C", "/tmp"}, unwrapped{Wrapper: "env", Opaque: "-C needs a command"}, true},
		{"env --help", []string{"env", "--help", "rm"}, unwrapped{Wrapper: "env"}, true},
		{"env signal options", []string{"env", "--default-signal", "--block-signal=INT", "x"}, unwrapped{Wrapper: "env", Inners: wsInner("x")}, true},

		// nice, nohup, setsid, stdbuf, time.
		{"nested wrappers peel one level", []string{"nice", "-n5", "nohup", "setsid", "ionice", "-c3", "x"},
			unwrapped{Wrapper: "nice", Inners: wsInner("nohup", "setsid", "ionice", "-c3", "x")}, true},
		{"nice legacy", []string{"nice", "-10", "rm", "x"}, unwrapped{Wrapper: "nice", Inners: wsInner("rm", "x")}, true},
		{"nice legacy negative", []string{"nice", "--5", "ls"}, unwrapped{Wrapper: "nice", Inners: wsInner("ls")}, true},
		{"nice --adjustment=", []string{"nice", "--adjustment=5", "--", "ls"}, unwrapped{Wrapper: "nice", Inners: wsInner("ls")}, true},
		{"nice --adj N", []string{"nice", "--adj", "5", "ls"}, unwrapped{Wrapper: "nice", Inners: wsInner("ls")}, true},
		{"nice alone", []string{"nice"}, unwrapped{Wrapper: "nice"}, true},
		{"nice adjustment without command", []string{"nice", "-n", "5"}, unwrapped{Wrapper: "nice", Opaque: "an adjustment needs a command"}, true},
		{"nice unknown", []string{"nice", "-x", "ls"}, unwrapped{Wrapper: "nice", Opaque: "unknown option -x"}, true},
		{"nice dynamic", []string{"nice", "$N", "ls"}, unwrapped{Wrapper: "nice", Opaque: "dynamic word $N where an option may stand"}, true},
		{"nohup", []string{"nohup", "sh", "-c", "x"}, unwrapped{Wrapper: "nohup", Inners: wsInner("sh", "-c", "x")}, true},
		{"nohup alone", []string{"nohup"}, unwrapped{Wrapper: "nohup", Opaque: "missing command"}, true},
		{"nohup --help", []string{"nohup", "--he", "rm"}, unwrapped{Wrapper: "nohup"}, true},
		{"nohup --", []string{"nohup", "--", "-x"}, unwrapped{Wrapper: "nohup", Inners: wsInner("-x")}, true},
		{"nohup option", []string{"nohup", "-x"}, unwrapped{Wrapper: "nohup", Opaque: "unknown option -x"}, true},
		{"setsid", []string{"setsid", "-f", "sh", "-c", "x"}, unwrapped{Wrapper: "setsid", Inners: wsInner("sh", "-c", "x")}, true},
		{"setsid cluster", []string{"setsid", "-fw", "--ctty", "--", "x"}, unwrapped{Wrapper: "setsid", Inners: wsInner("x")}, true},
		{"setsid alone", []string{"setsid"}, unwrapped{Wrapper: "setsid", Opaque: "missing command"}, true},
		{"stdbuf", []string{"stdbuf", "-oL", "grep", "x"}, unwrapped{Wrapper: "stdbuf", Inners: wsInner("grep", "x")}, true},
		{"stdbuf long", []string{"stdbuf", "--output=L", "-e", "0", "cmd"}, unwrapped{Wrapper: "stdbuf", Inners: wsInner("cmd")}, true},
		{"stdbuf without mode", []string{"stdbuf", "cmd"}, unwrapped{Wrapper: "stdbuf", Opaque: "no buffering mode option"}, true},
		{"stdbuf -o missing", []string{"stdbuf", "-o"}, unwrapped{Wrapper: "stdbuf", Opaque: "option -o needs an argument"}, true},
		{"time", []string{"time", "-f", "%e", "-o", "/tmp/t", "ls"}, unwrapped{Wrapper: "time", Inners: wsInner("ls")}, true},
		{"time long", []string{"/usr/bin/time", "--format=%e", "--", "ls"}, unwrapped{Wrapper: "time", Inners: wsInner("ls")}, true},
		{"time --out abbreviation", []string{"time", "--out", "/dev/null", "ls"}, unwrapped{Wrapper: "time", Inners: wsInner("ls")}, true},
		{"time without command", []string{"time", "-p"}, unwrapped{Wrapper: "time", Opaque: "missing command"}, true},
		{"time -V", []string{"time", "-V", "ls"}, unwrapped{Wrapper: "time"}, true},

		// timeout.
		{"timeout -s KILL", []string{"timeout", "-s", "KILL", "5", "sh", "-c", "x"}, unwrapped{Wrapper: "timeout", Inners: wsInner("sh", "-c", "x")}, true},
		{"timeout unknown option", []string{"timeout", "--frobnicate", "5", "rm"}, unwrapped{Wrapper: "timeout", Opaque: "unknown option --frobnicate"}, true},
		{"timeout alone", []string{"timeout"}, unwrapped{Wrapper: "timeout", Opaque: "missing duration"}, true},
		{"timeout without command", []string{"timeout", "5"}, unwrapped{Wrapper: "timeout", Opaque: "missing command"}, true},
		{"timeout attached args", []string{"timeout", "-k5", "--preserve-status", "1m", "rm", "-rf", "/"}, unwrapped{Wrapper: "timeout", Inners: wsInner("rm", "-rf", "/")}, true},
		{"timeout --sig=", []string{"timeout", "--sig=HUP", "5", "x"}, unwrapped{Wrapper: "timeout", Inners: wsInner("x")}, true},
		{"timeout --k eats the duration", []string{"timeout", "--k", "5", "x"}, unwrapped{Wrapper: "timeout", Opaque: "missing command"}, true},
		{"timeout options end at duration", []string{"timeout", "5", "-s", "KILL", "x"}, unwrapped{Wrapper: "timeout", Inners: wsInner("-s", "KILL", "x")}, true},
		{"timeout dynamic duration", []string{"timeout", "$T", "rm"}, unwrapped{Wrapper: "timeout", Opaque: "dynamic word $T where an option may stand"}, true},
		{"timeout dynamic command", []string{"timeout", "5", "$CMD", "x"}, unwrapped{Wrapper: "timeout", Inners: wsInner("$CMD", "x")}, true},
		{"timeout -- duration", []string{"timeout", "-v", "--", "5", "ls"}, unwrapped{Wrapper: "timeout", Inners: wsInner("ls")}, true},

		// flock.
		{"flock -c", []string{"flock", "/tmp/l", "-c", "rm -rf /"}, unwrapped{Wrapper: "flock", Code: ws("rm -rf /")}, true},
		{"flock command", []string{"flock", "-n", "/tmp/l", "rm", "x"}, unwrapped{Wrapper: "flock", Inners: wsInner("rm", "x")}, true},
		{"flock fd", []string{"flock", "9"}, unwrapped{Wrapper: "flock"}, true},
		{"flock -u fd", []string{"flock", "-u", "9"}, unwrapped{Wrapper: "flock"}, true},
		{"flock --command", []string{"flock", "-w", "5", "/tmp/l", "--command", "id"}, unwrapped{Wrapper: "flock", Code: ws("id")}, true},
		{"flock -c extra", []string{"flock", "/tmp/l", "-c", "a", "b"}, unwrapped{Wrapper: "flock", Opaque: "-c needs exactly one command argument"}, true},
		{"flock dynamic second operand", []string{"flock", "/tmp/l", "$X", "y"}, unwrapped{Wrapper: "flock", Opaque: "dynamic word $X where -c or the command may stand"}, true},
		{"flock alone", []string{"flock"}, unwrapped{Wrapper: "flock", Opaque: "missing file or descriptor"}, true},
		{"flock incompatible", []string{"flock", "-F", "-o", "/l", "x"}, unwrapped{Wrapper: "flock", Opaque: "--no-fork and --close are incompatible"}, true},
		{"flock ambiguous", []string{"flock", "--no", "/l", "x"}, unwrapped{Wrapper: "flock", Opaque: "ambiguous option --no"}, true},

		// ionice, taskset, chrt, prlimit.
		{"ionice", []string{"ionice", "-c3", "nice", "x"}, unwrapped{Wrapper: "ionice", Inners: wsInner("nice", "x")}, true},
		{"ionice pids", []string{"ionice", "-c", "2", "-n", "7", "-p", "123", "456"}, unwrapped{Wrapper: "ionice"}, true},
		{"ionice alone", []string{"ionice", "-t"}, unwrapped{Wrapper: "ionice"}, true},
		{"ionice long", []string{"ionice", "--class=idle", "x"}, unwrapped{Wrapper: "ionice", Inners: wsInner("x")}, true},
		{"taskset", []string{"taskset", "0x3", "cmd", "a"}, unwrapped{Wrapper: "taskset", Inners: wsInner("cmd", "a")}, true},
		{"taskset -c", []string{"taskset", "-c", "0,1", "cmd"}, unwrapped{Wrapper: "taskset", Inners: wsInner("cmd")}, true},
		{"taskset -p", []string{"taskset", "-p", "1234"}, unwrapped{Wrapper: "taskset"}, true},
		{"taskset -pc", []string{"taskset", "-pc", "0", "1234"}, unwrapped{Wrapper: "taskset"}, true},
		{"taskset mask only", []string{"taskset", "3"}, unwrapped{Wrapper: "taskset", Opaque: "missing mask or command"}, true},
		{"chrt", []string{"chrt", "-f", "99", "x"}, unwrapped{Wrapper: "chrt", Inners: wsInner("x")}, true},
		{"chrt -p", []string{"chrt", "-p", "1234"}, unwrapped{Wrapper: "chrt"}, true},
		{"chrt -m", []string{"chrt", "-m"}, unwrapped{Wrapper: "chrt"}, true},
		{"chrt deadline", []string{"chrt", "-d", "-T", "5000", "-P", "10000", "0", "x", "-y"}, unwrapped{Wrapper: "chrt", Inners: wsInner("x", "-y")}, true},
		{"chrt missing", []string{"chrt", "5"}, unwrapped{Wrapper: "chrt", Opaque: "missing priority or command"}, true},
		{"prlimit", []string{"prlimit", "--nofile=1024", "--as=1G", "cmd"}, unwrapped{Wrapper: "prlimit", Inners: wsInner("cmd")}, true},
		{"prlimit optional arg", []string{"prlimit", "-n", "5", "cmd"}, unwrapped{Wrapper: "prlimit", Inners: wsInner("5", "cmd")}, true},
		{"prlimit --pid", []string{"prlimit", "--pid", "123", "--nofile=1"}, unwrapped{Wrapper: "prlimit"}, true},
		{"prlimit --pid and command", []string{"prlimit", "--pid", "123", "cmd"}, unwrapped{Wrapper: "prlimit", Opaque: "--pid and a command are mutually exclusive"}, true},
		{"prlimit alone", []string{"prlimit"}, unwrapped{Wrapper: "prlimit"}, true},

		// chroot, unshare, nsenter, setpriv.
		{"chroot", []string{"chroot", "/srv/root", "/bin/sh", "-c", "id"},
			unwrapped{Wrapper: "chroot", Privilege: true, Root: ref("/srv/root"), Chdir: ref("/"), Inners: wsInner("/bin/sh", "-c", "id")}, true},
		{"chroot shell", []string{"chroot", "/srv"}, unwrapped{Wrapper: "chroot", Privilege: true, Opaque: "without command runs an interactive shell"}, true},
		{"chroot options", []string{"chroot", "--userspec=1000:1000", "--skip-chdir", "/", "ls"},
			unwrapped{Wrapper: "chroot", Privilege: true, Root: ref("/"), Inners: wsInner("ls")}, true},
		{"chroot alone", []string{"chroot"}, unwrapped{Wrapper: "chroot", Privilege: true, Opaque: "missing operand"}, true},
		{"unshare", []string{"unshare", "-r", "sh", "-c", "id"}, unwrapped{Wrapper: "unshare", Privilege: true, Inners: wsInner("sh", "-c", "id")}, true},
		{"unshare optional =value", []string{"unshare", "--mount=/run/ns", "--fork", "--", "ls"}, unwrapped{Wrapper: "unshare", Privilege: true, Inners: wsInner("ls")}, true},
		{"unshare optional value not taken", []string{"unshare", "--mount", "/x", "ls"}, unwrapped{Wrapper: "unshare", Privilege: true, Inners: wsInner("/x", "ls")}, true},
		{"unshare shell", []string{"unshare", "-Urm"}, unwrapped{Wrapper: "unshare", Privilege: true, Opaque: "without command runs an interactive shell"}, true},
		{"unshare -w", []string{"unshare", "--propagation", "private", "-w", "/tmp", "ls"}, unwrapped{Wrapper: "unshare", Privilege: true, Chdir: ref("/tmp"), Inners: wsInner("ls")}, true},
		{"unshare -R", []string{"unshare", "-R", "/newroot", "ls"}, unwrapped{Wrapper: "unshare", Privilege: true, Root: ref("/newroot"), Chdir: ref("/"), Inners: wsInner("ls")}, true},
		{"unshare many", []string{"unshare", "--kill-child=SIGTERM", "--pid", "--fork", "--setgroups", "deny", "-S", "0", "-G", "0", "x"}, unwrapped{Wrapper: "unshare", Privilege: true, Inners: wsInner("x")}, true},
		{"unshare unknown", []string{"unshare", "--mount-binfmt", "x"}, unwrapped{Wrapper: "unshare", Privilege: true, Opaque: "unknown option --mount-binfmt"}, true},
		{"nsenter", []string{"nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "sh"}, unwrapped{Wrapper: "nsenter", Privilege: true, Root: dynRef(targetMnt), Inners: wsInner("sh")}, true},
		{"nsenter shell", []string{"nsenter", "-t", "1"}, unwrapped{Wrapper: "nsenter", Privilege: true, Opaque: "without command runs an interactive shell"}, true},
		{"nsenter --net=", []string{"nsenter", "--net=/run/netns/x", "ip", "a"}, unwrapped{Wrapper: "nsenter", Privilege: true, Inners: wsInner("ip", "a")}, true},
		{"nsenter -r -w", []string{"nsenter", "-r/x", "-w/y", "ls"}, unwrapped{Wrapper: "nsenter", Privilege: true, Root: ref("/x"), Chdir: ref("/y"), Inners: wsInner("ls")}, true},
		{"setpriv", []string{"setpriv", "--reuid=1000", "--regid=1000", "--init-groups", "sh"}, unwrapped{Wrapper: "setpriv", Privilege: true, Inners: wsInner("sh")}, true},
		{"setpriv dump", []string{"setpriv", "-d"}, unwrapped{Wrapper: "setpriv", Privilege: true}, true},
		{"setpriv reset-env", []string{"setpriv", "--reset-env", "env"}, unwrapped{Wrapper: "setpriv", Privilege: true, ClearEnv: true, Inners: wsInner("env")}, true},
		{"setpriv no program", []string{"setpriv", "--nnp"}, unwrapped{Wrapper: "setpriv", Privilege: true, Opaque: "missing command"}, true},
		{"setpriv newer option", []string{"setpriv", "--landlock-access=fs", "x"}, unwrapped{Wrapper: "setpriv", Privilege: true, Opaque: "unknown option --landlock-access"}, true},

		// watch, script.
		{"watch joins into code", []string{"watch", "-n1", "curl x | sh"}, unwrapped{Wrapper: "watch", Code: ws("curl x | sh")}, true},
		{"watch joins words", []string{"watch", "-n", "1", "echo", "a b", "c"}, unwrapped{Wrapper: "watch", Code: ws("echo a b c")}, true},
		{"watch -x", []string{"watch", "-x", "ls", "-l"}, unwrapped{Wrapper: "watch", Inners: wsInner("ls", "-l")}, true},
		{"watch --differences=", []string{"watch", "--differences=permanent", "-t", "date"}, unwrapped{Wrapper: "watch", Code: ws("date")}, true},
		{"watch alone", []string{"watch"}, unwrapped{Wrapper: "watch", Opaque: "missing command"}, true},
		{"watch -n missing", []string{"watch", "-n"}, unwrapped{Wrapper: "watch", Opaque: "option -n needs an argument"}, true},
		{"watch dynamic part", []string{"watch", "echo", "$X"}, unwrapped{Wrapper: "watch", Code: []Word{dynWord("echo $X")}}, true},
		{"script -qc", []string{"script", "-qc", "id", "/dev/null"}, unwrapped{Wrapper: "script", Code: ws("id")}, true},
		{"script permutes", []string{"script", "-q", "/dev/null", "-c", "id"}, unwrapped{Wrapper: "script", Code: ws("id")}, true},
		{"script interactive", []string{"script"}, unwrapped{Wrapper: "script", Opaque: "without -c runs an interactive shell"}, true},
		{"script extra operand", []string{"script", "-c", "id", "a", "b"}, unwrapped{Wrapper: "script", Opaque: "unexpected number of arguments"}, true},
		{"script long", []string{"script", "--command=id", "--log-out=/tmp/o"}, unwrapped{Wrapper: "script", Code: ws("id")}, true},
		{"script log and file", []string{"script", "-O", "/tmp/o", "-c", "id", "f"}, unwrapped{Wrapper: "script", Opaque: "unexpected number of arguments"}, true},

		// sudo.
		{"sudo -u --", []string{"sudo", "-u", "root", "--", "rm", "-rf", "/"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("rm", "-rf", "/")}, true},
		{"sudo --preserve-env=", []string{"sudo", "--preserve-env=PATH", "id"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("id")}, true},
		{"sudo variables among options", []string{"sudo", "FOO=bar", "-u", "root", "BAZ=q", "env"},
			unwrapped{Wrapper: "sudo", Privilege: true, Assigns: ws("FOO=bar", "BAZ=q"), Inners: wsInner("env")}, true},
		{"sudo -- ends variables", []string{"sudo", "--", "FOO=1", "id"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("FOO=1", "id")}, true},
		{"sudo slash is no variable", []string{"sudo", "/x=1", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("/x=1", "ls")}, true},
		{"sudo -u -- quirk", []string{"sudo", "-u", "--", "FOO=1", "id"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("FOO=1", "id")}, true},
		{"sudo -s escapes", []string{"sudo", "-s", "rm -rf /"}, unwrapped{Wrapper: "sudo", Privilege: true, Code: ws(`rm\ -rf\ \/`)}, true},
		{"sudo -s keeps $", []string{"sudo", "-s", "echo", "a;b", "x$HOME"}, unwrapped{Wrapper: "sudo", Privilege: true, Code: ws(`echo a\;b x$HOME`)}, true},
		{"sudo -i", []string{"sudo", "-i", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Chdir: dynRef("~root"), Code: ws("ls")}, true},
		{"sudo -i -u", []string{"sudo", "-iu", "bob", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Chdir: dynRef("~bob"), Code: ws("ls")}, true},
		{"sudo -s dynamic", []string{"sudo", "-s", "echo", "$X"}, unwrapped{Wrapper: "sudo", Privilege: true, Code: []Word{dynWord(`echo $X`)}}, true},
		{"sudo -s shell", []string{"sudo", "-s"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "without command runs an interactive shell"}, true},
		{"sudo alone", []string{"sudo"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "without command runs an interactive shell"}, true},
		{"sudo -l checks", []string{"sudo", "-l", "rm", "-rf", "/"}, unwrapped{Wrapper: "sudo", Privilege: true}, true},
		{"sudo -v", []string{"sudo", "-v"}, unwrapped{Wrapper: "sudo", Privilege: true}, true},
		{"sudo -k alone", []string{"sudo", "-k"}, unwrapped{Wrapper: "sudo", Privilege: true}, true},
		{"sudo -k runs", []string{"sudo", "-k", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("ls")}, true},
		{"sudo -K with command", []string{"sudo", "-K", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "this mode takes no command"}, true},
		{"sudo -e", []string{"sudo", "-e", "/etc/passwd"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "-e edits files as another user"}, true},
		{"sudo -h help", []string{"sudo", "-h"}, unwrapped{Wrapper: "sudo", Privilege: true}, true},
		{"sudo -h host", []string{"sudo", "-h", "host", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("ls")}, true},
		{"sudo -hhost", []string{"sudo", "-hhost", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("ls")}, true},
		{"sudo -h -- is help", []string{"sudo", "-h", "--", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "this mode takes no command"}, true},
		{"sudo -D -R", []string{"sudo", "-D", "/tmp", "-R", "/jail", "./run.sh"}, unwrapped{Wrapper: "sudo", Privilege: true, Chdir: ref("/tmp"), Root: ref("/jail"), Inners: wsInner("./run.sh")}, true},
		{"sudo dynamic user", []string{"sudo", "-u", "$U", "id"}, unwrapped{Wrapper: "sudo", Privilege: true, Inners: wsInner("id")}, true},
		{"sudo dynamic option", []string{"sudo", "$X", "id"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "dynamic word $X where an option may stand"}, true},
		{"sudo -is", []string{"sudo", "-is", "x"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "-i and -s are exclusive"}, true},
		{"sudo -E -i", []string{"sudo", "-E", "-i", "ls"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "-i and -E are exclusive"}, true},
		{"sudo ambiguous", []string{"sudo", "--pres=x", "id"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "ambiguous option --pres"}, true},
		{"sudo BSD-only option", []string{"sudo", "-c", "class", "id"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "-c is not supported on this system"}, true},
		{"sudo --preserve-env -s", []string{"sudo", "--preserve-env", "-s", "x"}, unwrapped{Wrapper: "sudo", Privilege: true, Code: ws("x")}, true},
		{"sudo conflicting modes", []string{"sudo", "-l", "-v"}, unwrapped{Wrapper: "sudo", Privilege: true, Opaque: "only one of -e, -h, -i, -K, -l, -s, -v or -V may be given"}, true},
		{"sudoedit", []string{"sudoedit", "/etc/x"}, unwrapped{Wrapper: "sudoedit", Privilege: true, Opaque: "edits files as another user"}, true},

		// doas, su, runuser, pkexec, capsh.
		{"doas", []string{"doas", "-u", "root", "rm", "x"}, unwrapped{Wrapper: "doas", Privilege: true, Inners: wsInner("rm", "x")}, true},
		{"doas -s", []string{"doas", "-s"}, unwrapped{Wrapper: "doas", Privilege: true, Opaque: "-s runs an interactive shell"}, true},
		{"doas -C checks", []string{"doas", "-C", "/etc/doas.conf", "rm"}, unwrapped{Wrapper: "doas", Privilege: true}, true},
		{"doas -L", []string{"doas", "-L"}, unwrapped{Wrapper: "doas", Privilege: true}, true},
		{"doas alone", []string{"doas"}, unwrapped{Wrapper: "doas", Privilege: true, Opaque: "missing command"}, true},
		{"doas long option", []string{"doas", "--user", "root", "ls"}, unwrapped{Wrapper: "doas", Privilege: true, Opaque: "unknown option --user"}, true},
		{"su -c", []string{"su", "-c", "id"}, unwrapped{Wrapper: "su", Privilege: true, Code: ws("id")}, true},
		{"su - root -c", []string{"su", "-", "root", "-c", "id"}, unwrapped{Wrapper: "su", Privilege: true, Chdir: dynRef("~root"), Code: ws("id")}, true},
		{"su user then -c", []string{"su", "root", "-c", "id", "a", "b"}, unwrapped{Wrapper: "su", Privilege: true, Code: ws("id")}, true},
		{"su -l --command=", []string{"su", "-l", "bob", "--command=id"}, unwrapped{Wrapper: "su", Privilege: true, Chdir: dynRef("~bob"), Code: ws("id")}, true},
		{"su interactive", []string{"su"}, unwrapped{Wrapper: "su", Privilege: true, Opaque: "without -c runs an interactive shell"}, true},
		{"su shell arguments", []string{"su", "root", "script.sh"}, unwrapped{Wrapper: "su", Privilege: true, Opaque: "passes its arguments to the user's shell"}, true},
		{"su -s python", []string{"su", "-s", "/usr/bin/python3", "-c", "import os"}, unwrapped{Wrapper: "su", Privilege: true, Opaque: "-s /usr/bin/python3 runs the command with a shell the analyzer cannot parse"}, true},
		{"su -s bash", []string{"su", "-s", "/bin/bash", "-c", "id"}, unwrapped{Wrapper: "su", Privilege: true, Code: ws("id")}, true},
		{"su --session-command", []string{"su", "--session-command=id"}, unwrapped{Wrapper: "su", Privilege: true, Code: ws("id")}, true},
		{"su -u", []string{"su", "-u", "x", "id"}, unwrapped{Wrapper: "su", Privilege: true, Opaque: "-u is only for runuser"}, true},
		{"su dynamic operand", []string{"su", "$U", "-c", "id"}, unwrapped{Wrapper: "su", Privilege: true, Opaque: "dynamic word $U where an option may stand"}, true},
		{"runuser -u", []string{"runuser", "-u", "nobody", "--", "id", "-u"}, unwrapped{Wrapper: "runuser", Privilege: true, Inners: wsInner("id", "-u")}, true},
		{"runuser permutes into the command", []string{"runuser", "-u", "nobody", "ls", "-la"}, unwrapped{Wrapper: "runuser", Privilege: true, Opaque: "unknown option -a"}, true},
		{"runuser -u excludes -l", []string{"runuser", "-u", "nobody", "-l", "--", "id"}, unwrapped{Wrapper: "runuser", Privilege: true, Opaque: "-u excludes --shell, --fast, --command and --login"}, true},
		{"runuser su-style", []string{"runuser", "-l", "nobody", "-c", "id"}, unwrapped{Wrapper: "runuser", Privilege: true, Chdir: dynRef("~nobody"), Code: ws("id")}, true},
		{"pkexec", []string{"pkexec", "--user", "root", "rm", "x"}, unwrapped{Wrapper: "pkexec", Privilege: true, Chdir: dynRef(pkexecHome), Inners: wsInner("rm", "x")}, true},
		{"pkexec --keep-cwd", []string{"pkexec", "--keep-cwd", "./x"}, unwrapped{Wrapper: "pkexec", Privilege: true, Inners: wsInner("./x")}, true},
		{"pkexec shell", []string{"pkexec"}, unwrapped{Wrapper: "pkexec", Privilege: true, Opaque: "without a program runs the user's shell"}, true},
		{"pkexec unknown", []string{"pkexec", "--frob", "x"}, unwrapped{Wrapper: "pkexec", Privilege: true, Opaque: "unknown option --frob"}, true},
		{"capsh -- -c", []string{"capsh", "--caps=cap_net_raw+eip", "--", "-c", "ping x"}, unwrapped{Wrapper: "capsh", Privilege: true, Code: ws("ping x")}, true},
		{"capsh print", []string{"capsh", "--print"}, unwrapped{Wrapper: "capsh", Privilege: true}, true},
		{"capsh other shell", []string{"capsh", "--shell=/usr/bin/python3", "--", "-c", "x"}, unwrapped{Wrapper: "capsh", Privilege: true, Opaque: "-- runs /usr/bin/python3, not a shell the analyzer can parse"}, true},
		{"capsh script", []string{"capsh", "--", "script.sh"}, unwrapped{Wrapper: "capsh", Privilege: true, Opaque: "-- passes its arguments to the shell"}, true},
		{"capsh ==", []string{"capsh", "==", "--print"}, unwrapped{Wrapper: "capsh", Privilege: true, Opaque: "== runs capsh again"}, true},
		{"capsh unknown", []string{"capsh", "--frob"}, unwrapped{Wrapper: "capsh", Privilege: true, Opaque: "unknown argument --frob"}, true},
		{"capsh chroot", []string{"capsh", "--chroot=/x", "--", "-c", "id"}, unwrapped{Wrapper: "capsh", Privilege: true, Root: ref("/x"), Code: ws("id")}, true},

		// strace.
		{"strace", []string{"strace", "-o", "/dev/null", "/bin/sh", "-c", "rm -rf /tmp/x"}, unwrapped{Wrapper: "strace", Inners: wsInner("/bin/sh", "-c", "rm -rf /tmp/x")}, true},
		{"strace -o pipe runs code", []string{"strace", "-o", "|sh -c id", "true"}, unwrapped{Wrapper: "strace", Code: ws("sh -c id"), Inners: wsInner("true")}, true},
		{"strace -E", []string{"strace", "-fE", "LD_PRELOAD=/x.so", "-E", "HOME", "ls"}, unwrapped{Wrapper: "strace", Assigns: ws("LD_PRELOAD=/x.so"), Unsets: []string{"HOME"}, Inners: wsInner("ls")}, true},
		{"strace -u", []string{"strace", "-u", "bob", "id"}, unwrapped{Wrapper: "strace", Privilege: true, Inners: wsInner("id")}, true},
		{"strace -p", []string{"strace", "-p", "1"}, unwrapped{Wrapper: "strace"}, true},
		{"strace alone", []string{"strace", "-f"}, unwrapped{Wrapper: "strace", Opaque: "missing command"}, true},
		{"strace abbreviation", []string{"strace", "--out=/dev/null", "ls"}, unwrapped{Wrapper: "strace", Opaque: "option --out is not understood by the analyzer"}, true},
		{"strace long", []string{"strace", "--output=/dev/null", "--trace=file", "--", "ls"}, unwrapped{Wrapper: "strace", Inners: wsInner("ls")}, true},
		{"strace dynamic -o", []string{"strace", "-o", "$F", "ls"}, unwrapped{Wrapper: "strace", Opaque: "dynamic -o value $F may name a command"}, true},

		// Opaque by nature.
		{"systemd-run", []string{"systemd-run", "--user", "x"}, unwrapped{Wrapper: "systemd-run", Privilege: true, Opaque: "hands the command to the service manager"}, true},
		{"bwrap", []string{"bwrap", "--ro-bind", "/", "/", "sh"}, unwrapped{Wrapper: "bwrap", Opaque: "nested sandbox tool"}, true},
		{"firejail", []string{"firejail", "x"}, unwrapped{Wrapper: "firejail", Opaque: "nested sandbox tool"}, true},

		// busybox.
		{"busybox applet", []string{"busybox", "sh", "-c", "id"}, unwrapped{Wrapper: "busybox", Inners: wsInner("sh", "-c", "id")}, true},
		{"busybox alone", []string{"busybox"}, unwrapped{Wrapper: "busybox"}, true},
		{"busybox --list", []string{"busybox", "--list-full"}, unwrapped{Wrapper: "busybox"}, true},
		{"busybox path applet", []string{"busybox", "/bin/ls"}, unwrapped{Wrapper: "busybox", Inners: wsInner("/bin/ls")}, true},
		{"busybox dynamic", []string{"busybox", "$A"}, unwrapped{Wrapper: "busybox", Opaque: "dynamic applet name $A"}, true},

		// xargs.
		{"xargs -I sh -c", []string{"xargs", "-I{}", "sh", "-c", "echo {}"},
			unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: [][]Word{{litWord("sh"), litWord("-c"), dynWord("echo {}")}}}, true},
		{"xargs default echo", []string{"xargs"}, unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: wsInner("echo")}, true},
		{"xargs options", []string{"xargs", "-0", "-n1", "rm", "-f"}, unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: wsInner("rm", "-f")}, true},
		{"xargs -i", []string{"xargs", "-i", "cp", "{}", "/bak"}, unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: [][]Word{{litWord("cp"), dynWord("{}"), litWord("/bak")}}}, true},
		{"xargs --replace=", []string{"xargs", "--replace=%", "mv", "%", "%.bak"}, unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: [][]Word{{litWord("mv"), dynWord("%"), dynWord("%.bak")}}}, true},
		{"xargs -a -P", []string{"xargs", "-a", "list.txt", "-P4", "wget"}, unwrapped{Wrapper: "xargs", StdinArgs: true, ArgFiles: ws("list.txt"), Inners: wsInner("wget")}, true},
		{"xargs optional -e", []string{"xargs", "-e", "sh"}, unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: wsInner("sh")}, true},
		{"xargs replace in command name", []string{"xargs", "-Ix", "x"}, unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: [][]Word{{dynWord("x")}}}, true},
		{"xargs slot var", []string{"xargs", "--process-slot-var=S", "sh"}, unwrapped{Wrapper: "xargs", StdinArgs: true, Inners: wsInner("sh")}, true},
		{"xargs unknown", []string{"xargs", "-z"}, unwrapped{Wrapper: "xargs", Opaque: "unknown option -z"}, true},
		{"xargs --help", []string{"xargs", "--help"}, unwrapped{Wrapper: "xargs"}, true},
		{"xargs -I missing", []string{"xargs", "-I"}, unwrapped{Wrapper: "xargs", Opaque: "option -I needs an argument"}, true},
		{"xargs dynamic replace", []string{"xargs", "-I", "$R", "sh"}, unwrapped{Wrapper: "xargs", Opaque: "dynamic replacement string $R"}, true},

		// find.
		{"find -exec sh -c", []string{"find", ".", "-name", "x", "-exec", "sh", "-c", `rm "$1"`, "_", "{}", ";"},
			unwrapped{Wrapper: "find", Inners: [][]Word{{litWord("sh"), litWord("-c"), litWord(`rm "$1"`), litWord("_"), dynWord("{}")}}}, true},
		{"find -execdir +", []string{"find", ".", "-execdir", "rm", "{}", "+"},
			unwrapped{Wrapper: "find", Chdir: dynRef(execdirDir), Inners: [][]Word{{litWord("rm"), dynWord("{}")}}}, true},
		{"find -delete", []string{"find", ".", "-name", "*.tmp", "-delete"}, unwrapped{Wrapper: "find"}, true},
		{"find missing terminator", []string{"find", "/", "-exec", "rm", "{}"}, unwrapped{Wrapper: "find", Opaque: "missing argument to -exec"}, true},
		{"find two execs", []string{"find", "-L", "/x", "-maxdepth", "2", "-type", "f", "-exec", "chmod", "644", "{}", "+", "-exec", "echo", "done", ";"},
			unwrapped{Wrapper: "find", Inners: [][]Word{{litWord("chmod"), litWord("644"), dynWord("{}")}, ws("echo", "done")}}, true},
		{"find -ok", []string{"find", ".", "-ok", "rm", "{}", ";"}, unwrapped{Wrapper: "find", Inners: [][]Word{{litWord("rm"), dynWord("{}")}}}, true},
		{"find + then stray ;", []string{"find", ".", "-exec", "echo", "{}", "+", ";"}, unwrapped{Wrapper: "find", Opaque: "paths must precede expression: ;"}, true},
		{"find plain +", []string{"find", ".", "-exec", "echo", "+", ";"}, unwrapped{Wrapper: "find", Inners: wsInner("echo", "+")}, true},
		{"find {} not alone before +", []string{"find", ".", "-exec", "echo", "a{}", "+"}, unwrapped{Wrapper: "find", Opaque: "in -exec ... + the {} must stand alone"}, true},
		{"find two {} with +", []string{"find", ".", "-exec", "echo", "{}", "{}", "+"}, unwrapped{Wrapper: "find", Opaque: "only one {} is supported with -exec ... +"}, true},
		{"find -ok has no +", []string{"find", ".", "-ok", "echo", "{}", "+", ";"}, unwrapped{Wrapper: "find", Inners: [][]Word{{litWord("echo"), dynWord("{}"), litWord("+")}}}, true},
		{"find predicate argument", []string{"find", ".", "-name", "-exec"}, unwrapped{Wrapper: "find"}, true},
		{"find dynamic first word", []string{"find", "$DIR", "-name", "x"}, unwrapped{Wrapper: "find", Opaque: "dynamic word $DIR where an option may stand"}, true},
		{"find dynamic starting point", []string{"find", ".", "$DIR", "-name", "x"}, unwrapped{Wrapper: "find", Opaque: "dynamic starting point $DIR"}, true},
		{"find dynamic in exec", []string{"find", ".", "-exec", "rm", "$F", ";"}, unwrapped{Wrapper: "find", Opaque: "dynamic word $F in -exec"}, true},
		{"find dynamic predicate arg", []string{"find", ".", "-name", "$P", "-exec", "ls", ";"}, unwrapped{Wrapper: "find", Inners: wsInner("ls")}, true},
		{"find unknown predicate", []string{"find", ".", "-frob"}, unwrapped{Wrapper: "find", Opaque: "unknown predicate -frob"}, true},
		{"find -help first", []string{"find", ".", "-help", "-exec", "rm", "{}", ";"}, unwrapped{Wrapper: "find"}, true},
		{"find -newerXY", []string{"find", ".", "-newermt", "2020-01-01", "-exec", "ls", "{}", ";"}, unwrapped{Wrapper: "find", Inners: [][]Word{{litWord("ls"), dynWord("{}")}}}, true},
		{"find -fprintf", []string{"find", ".", "-fprintf", "/tmp/o", "%p", "-exec", "id", ";"}, unwrapped{Wrapper: "find", Inners: wsInner("id")}, true},
		{"find alone", []string{"find"}, unwrapped{Wrapper: "find"}, true},
		{"find -D", []string{"find", "-D", "exec", ".", "-exec", "x", ";"}, unwrapped{Wrapper: "find", Inners: wsInner("x")}, true},
		{"find empty exec", []string{"find", ".", "-exec", ";"}, unwrapped{Wrapper: "find", Opaque: "missing argument to -exec"}, true},
		{"find stray operand", []string{"find", ".", "-name", "x", "foo"}, unwrapped{Wrapper: "find", Opaque: "paths must precede expression: foo"}, true},
		{"find runs what it finds", []string{"find", ".", "-exec", "{}", ";"}, unwrapped{Wrapper: "find", Inners: [][]Word{{dynWord("{}")}}}, true},
		{"find operators", []string{"find", ".", "(", "-name", "a", "-o", "!", "-name", "b", ")", ",", "-exec", "x", ";"}, unwrapped{Wrapper: "find", Inners: wsInner("x")}, true},
		{"find missing predicate argument", []string{"find", ".", "-name"}, unwrapped{Wrapper: "find", Opaque: "missing argument to -name"}, true},

		// parallel.
		{"parallel :::", []string{"parallel", "echo", ":::", "a", "b"}, unwrapped{Wrapper: "parallel", Code: ws("echo")}, true},
		{"parallel reads stdin", []string{"parallel", "-j4", "gzip"}, unwrapped{Wrapper: "parallel", StdinArgs: true, Code: ws("gzip")}, true},
		{"parallel commands as arguments", []string{"parallel", ":::", "echo 1", "rm -rf /"}, unwrapped{Wrapper: "parallel", Code: ws("echo 1", "rm -rf /")}, true},
		{"parallel -S", []string{"parallel", "-S", "host", "echo", ":::", "a"}, unwrapped{Wrapper: "parallel", Opaque: "option -S is not understood by the analyzer"}, true},
		{"parallel perl replacement", []string{"parallel", "echo", `{= system("x") =}`, ":::", "a"}, unwrapped{Wrapper: "parallel", Opaque: "{= =} replacement strings run Perl code"}, true},
		{"parallel -q", []string{"parallel", "-q", "sh", "-c", "echo {}", ":::", "a"}, unwrapped{Wrapper: "parallel", Code: []Word{dynWord("sh -c 'echo {}'")}}, true},
		{"parallel ::::", []string{"parallel", "echo {}", "::::", "file"}, unwrapped{Wrapper: "parallel", StdinArgs: true, ArgFiles: ws("file"), Code: ws("echo {}")}, true},
		{"parallel unknown", []string{"parallel", "--frobnicate", "x"}, unwrapped{Wrapper: "parallel", Opaque: "option --frobnicate is not understood by the analyzer"}, true},
		{"parallel options", []string{"parallel", "--will-cite", "-k", "--jobs", "2", "rm", "{}", ":::", "a"}, unwrapped{Wrapper: "parallel", Code: ws("rm {}")}, true},
		{"parallel alone", []string{"parallel"}, unwrapped{Wrapper: "parallel", Opaque: "without a command runs its input as commands"}, true},
		{"parallel --arg-sep", []string{"parallel", "--arg-sep", ",,", "echo", ",,", "a"}, unwrapped{Wrapper: "parallel", Code: ws("echo")}, true},
		{"parallel --dry-run", []string{"parallel", "--dry-run", "rm", ":::", "x"}, unwrapped{Wrapper: "parallel"}, true},
		{"parallel --pipe", []string{"parallel", "--pipe", "wc", "-l"}, unwrapped{Wrapper: "parallel", Code: ws("wc -l")}, true},
		{"parallel abbreviation", []string{"parallel", "--jo", "2", "x"}, unwrapped{Wrapper: "parallel", Opaque: "option --jo is not understood by the analyzer"}, true},
		{"parallel quoted replacement", []string{"parallel", "echo '{}'", ":::", "a"}, unwrapped{Wrapper: "parallel", Code: []Word{dynWord("echo '{}'")}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argv := ws(tc.argv...)
			keep := append([]Word(nil), argv...)
			got, ok := unwrap(argv)
			if ok != tc.ok {
				t.Fatalf("unwrap(%q) ok = %v, want %v", tc.argv, ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(unwrapped{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("unwrap(%q) mismatch (-want +got):\n%s", tc.argv, diff)
			}
			if diff := cmp.Diff(keep, argv, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("unwrap modified its argument:\n%s", diff)
			}
		})
	}
}

// TestUnwrapCopies checks that Inners do not alias the caller's argv.
func TestUnwrapCopies(t *testing.T) {
	t.Parallel()
	argv := ws("timeout", "5", "rm", "x")
	u, ok := unwrap(argv)
	if !ok || len(u.Inners) != 1 {
		t.Fatalf("unexpected %+v", u)
	}
	u.Inners[0][0].Value = "changed"
	if argv[2].Value != "rm" {
		t.Fatalf("Inners aliases argv: %q", argv[2].Value)
	}
}

// TestWrapperNames keeps the name list and the grammars together.
func TestWrapperNames(t *testing.T) {
	t.Parallel()
	for name := range wrapperNames {
		if _, ok := unwrap(ws(name)); !ok {
			t.Errorf("%s is listed but not unwrapped", name)
		}
	}
	if len(wrapperNames) != len(wrapperTable) {
		t.Errorf("wrapperNames has %d names, wrapperTable %d", len(wrapperNames), len(wrapperTable))
	}
}

func TestSplitEnvString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"   ", nil, false},
		{"a b", []string{"a", "b"}, false},
		{`'a b' "c d"`, []string{"a b", "c d"}, false},
		{`''`, []string{""}, false},
		{`a'b'c`, []string{"abc"}, false},
		{`'a\'b' 'x\\y' "q\"r"`, []string{"a'b", `x\y`, `q"r`}, false},
		{`'a\nb'`, []string{`a\nb`}, false},
		{`"a\tb"`, []string{"a\tb"}, false},
		{`a\_b "c\_d"`, []string{"a", "b", "c d"}, false},
		{`a#b #c`, []string{"a#b"}, false},
		{`# all comment`, nil, false},
		{`a \c b`, []string{"a"}, false},
		{`'$x' \$y`, []string{"$x", "$y"}, false},
		{`"\c"`, nil, true},
		{`a\`, nil, true},
		{`a\q`, nil, true},
		{`"open`, nil, true},
		{`${HOME}`, nil, true},
		{`$HOME`, nil, true},
	}
	for _, tc := range tests {
		got, err := splitEnvString(tc.in)
		if (err != "") != tc.err {
			t.Errorf("splitEnvString(%q) error %q, want error %v", tc.in, err, tc.err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("splitEnvString(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzUnwrap checks that unwrap never panics and never invents a command:
// every inner argv is a run of the input words (an ordered subsequence for
// runuser, whose getopt permutes, or words env -S split off them), apart
// from xargs' default echo, and words only ever gain Dynamic.
func FuzzUnwrap(f *testing.F) {
	for _, s := range []string{
		"sudo -u root -- rm -rf /",
		"env -S'-i FOO=1 sh -c id' x",
		"env -iS-S\\_'rm\\_-rf' y",
		"find . -name x -exec sh -c x _ {} ; -execdir rm {} +",
		"xargs -I{} sh -c {}",
		"timeout -s KILL 5 nice -n5 x",
		"su - root -c id",
		"runuser -u nobody -- id",
		"parallel -kj2 echo ::: a b",
		"watch -n1 echo $X",
		"script -qc id /dev/null",
		"flock /tmp/l -c x",
		"busybox sh -c id",
		"capsh --caps=x -- -c id",
		"nsenter -t 1 -a sh",
		"unshare --mount= -r sh",
		"prlimit -n5 x",
		"chrt -f 1 x",
		"exec -cla x y",
		"command -p -- x",
		"strace -fo |id -E A=1 ls",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var argv []Word
		for _, p := range strings.Split(s, " ") {
			argv = append(argv, Word{Value: p, Dynamic: strings.HasPrefix(p, "$")})
		}
		u, ok := unwrap(argv)
		if !ok {
			if diff := cmp.Diff(unwrapped{}, u, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("ok=false with a result: %s", diff)
			}
			return
		}
		if u.Opaque != "" && (len(u.Inners) > 0 || len(u.Code) > 0) {
			t.Fatalf("opaque %q with commands %+v", u.Opaque, u)
		}
		sources := [][]Word{argv}
		if u.Wrapper == "env" {
			sources = append(sources, envSplits(argv, 3)...)
		}
		for _, inner := range u.Inners {
			if len(inner) == 0 {
				t.Fatalf("empty inner argv in %+v", u)
			}
			if u.Wrapper == "xargs" && len(inner) == 1 && inner[0] == (Word{Value: "echo"}) {
				continue
			}
			if u.Wrapper == "runuser" {
				// Permutation gathers the operands from around the
				// options: an ordered subsequence of argv.
				if !isSubsequence(inner, argv) {
					t.Fatalf("inner %+v is not taken from %q", inner, s)
				}
				continue
			}
			if !fromSources(inner, sources) {
				t.Fatalf("inner %+v is not taken from %q", inner, s)
			}
		}
	})
}

// envSplits returns, as extra word sources, what env -S could split off the
// words (or the part after S or = in them), depth levels deep.
func envSplits(words []Word, depth int) [][]Word {
	if depth == 0 {
		return nil
	}
	var out [][]Word
	for _, w := range words {
		for k := 0; k <= len(w.Value); k++ {
			// An -S argument is a whole word, or follows S in a
			// cluster or = in --split-string=.
			if k > 0 && w.Value[k-1] != 'S' && w.Value[k-1] != '=' {
				continue
			}
			split, err := splitEnvString(w.Value[k:])
			if err != "" || len(split) == 0 {
				continue
			}
			ws := make([]Word, len(split))
			for i, v := range split {
				ws[i] = Word{Value: v}
			}
			out = append(out, ws)
			out = append(out, envSplits(ws, depth-1)...)
		}
	}
	return out
}

// fromSources reports whether each word of inner equals, up to gaining
// Dynamic, some word of the sources. Inner words are contiguous in argv
// except where env -S splicing joins split words to later argv words.
func fromSources(inner []Word, sources [][]Word) bool {
	for _, w := range inner {
		found := false
		for _, src := range sources {
			for _, sw := range src {
				if sw.Value == w.Value && (w.Dynamic || !sw.Dynamic) {
					found = true
				}
			}
		}
		if !found {
			return false
		}
	}
	if len(sources) == 1 {
		return isRun(inner, sources[0])
	}
	return true
}

// isRun reports whether inner is a contiguous run of src (Dynamic may only
// be gained).
func isRun(inner, src []Word) bool {
	for k := 0; k+len(inner) <= len(src); k++ {
		match := true
		for i, w := range inner {
			sw := src[k+i]
			if sw.Value != w.Value || (sw.Dynamic && !w.Dynamic) {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// isSubsequence reports whether inner appears in src in order, gaps allowed.
func isSubsequence(inner, src []Word) bool {
	k := 0
	for _, sw := range src {
		if k < len(inner) && sw.Value == inner[k].Value && (inner[k].Dynamic || !sw.Dynamic) {
			k++
		}
	}
	return k == len(inner)
}
