//go:build linux

package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// afVsock is AF_VSOCK (not in package syscall): host-guest sockets, which
// no network namespace confines.
const afVsock = 40

// seccompAttack is the attack of the filter's conditional rules: the kernel
// reads int arguments on their low 32 bits, so a filter comparing 64 bits
// lets socket((1<<32)|AF_UNIX, …) through. From perl's syscall(), which
// passes 64-bit integers: a high-bit AF_UNIX socket connected to each host
// Unix listener named, a datagram socketpair reconnected to a host datagram
// socket, an AF_VSOCK socket and a high-bit TIOCSTI. Each outcome is a line:
// HOST-REACHED-… when the call got through, else "what: errno N (text)".
// Arguments: the system-call numbers of socket connect socketpair sendto
// ioctl, TIOCSTI, AF_VSOCK, the datagram socket's path, then name=path for
// every stream listener.
const seccompAttack = `perl -MSocket -e '
my ($socket, $connect, $pair, $sendto, $ioctl, $tiocsti, $vsock) = map { $_ + 0 } @ARGV[0 .. 6];
my $dgram = $ARGV[7];
my $hi = 1 << 32;
sub refused { printf "%s: errno %d (%s)\n", $_[0], $! + 0, $! }
for (@ARGV[8 .. $#ARGV]) {
	my ($name, $path) = split /=/, $_, 2;
	my $fd = syscall($socket, $hi | AF_UNIX, SOCK_STREAM, 0);
	if ($fd < 0) { refused("hi-unix-socket $name"); next }
	my $addr = pack_sockaddr_un($path);
	if (syscall($connect, $fd, $addr, length $addr) < 0) { refused("hi-unix-connect $name"); next }
	print "HOST-REACHED-hi-unix-$name\n";
}
my $fds = "\0" x 8;
if (syscall($pair, AF_UNIX, SOCK_DGRAM, 0, $fds) < 0) {
	refused("dgram-socketpair");
} else {
	my ($fd) = unpack "i", $fds;
	my $addr = pack_sockaddr_un($dgram);
	my $msg = "HOST-REACHED-dgram";
	if (syscall($connect, $fd, $addr, length $addr) < 0) { refused("dgram-connect") }
	elsif (syscall($sendto, $fd, $msg, length $msg, 0, 0, 0) < 0) { refused("dgram-send") }
	else { print "HOST-REACHED-dgram\n" }
}
if (syscall($socket, $vsock, SOCK_STREAM, 0) < 0) { refused("vsock-socket") } else { print "VSOCK-OPEN\n" }
my $c = "x";
if (syscall($ioctl, 0, $hi | $tiocsti, $c) < 0) { refused("hi-tiocsti") } else { print "TIOCSTI-DONE\n" }
'`

// TestSeccompAttack runs the attack through bin/mitrity-gateway exec, as
// root (the command runs as the run_as user) and with the gateway itself
// run by the unprivileged user, and checks the host listeners afterwards.
// The control runs the same attack as the run user on the host, where it
// reaches every listener.
func TestSeccompAttack(t *testing.T) {
	host := newAttackHost(t)
	for _, asUser := range []bool{false, true} {
		name := "root-gateway"
		if asUser {
			name = "unprivileged-gateway"
		}
		if os.Geteuid() != 0 {
			if asUser {
				continue
			}
			name = "invoking-user"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newAttackEnv(t, asUser, host)
			dgramPath := filepath.Join(e.ws, "host-dgram.sock")
			dgram := listenDgram(t, dgramPath)
			script := seccompAttack + " " + strings.Join([]string{
				strconv.Itoa(syscall.SYS_SOCKET), strconv.Itoa(syscall.SYS_CONNECT), strconv.Itoa(syscall.SYS_SOCKETPAIR),
				strconv.Itoa(syscall.SYS_SENDTO), strconv.Itoa(syscall.SYS_IOCTL), strconv.Itoa(syscall.TIOCSTI),
				strconv.Itoa(afVsock), dgramPath, "unix=" + e.unixPath, "ws=" + e.wsSock,
			}, " ")

			// The control: from a host process the same calls reach the
			// listeners (so the attack below can fail).
			before := e.counts()
			dgramBefore := dgram.Load()
			out := e.onHost(t, script+" </dev/null")
			for _, want := range []string{"HOST-REACHED-hi-unix-unix\n", "HOST-REACHED-hi-unix-ws\n", "HOST-REACHED-dgram\n"} {
				if !strings.Contains(out, want) {
					t.Fatalf("control: %q not printed by a host process:\n%s", want, out)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for _, n := range []string{"unix", "unix-ws"} {
				for e.ls[n].accepted.Load() == before[n] && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if e.ls[n].accepted.Load() == before[n] {
					t.Fatalf("control: the %s listener accepted nothing from a host process", n)
				}
			}
			for dgram.Load() == dgramBefore && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if dgram.Load() == dgramBefore {
				t.Fatal("control: the datagram socket received nothing from a host process")
			}

			before, dgramBefore = e.counts(), dgram.Load()
			r := e.run(t, "--", script)
			if r.exec("status") != "completed" || r.exec("sandbox_mode") != "bubblewrap" {
				t.Fatalf("not a completed bubblewrap run: %v", r.ev)
			}
			e.checkNoConnections(t, before, "the high-bit socket attack")
			if n := dgram.Load() - dgramBefore; n != 0 {
				t.Errorf("the host's datagram socket received %d datagrams", n)
			}
			for _, s := range []string{"HOST-REACHED", "VSOCK-OPEN", "TIOCSTI-DONE"} {
				if strings.Contains(r.out, s) {
					t.Errorf("%s:\n%s", s, r.out)
				}
			}
			for _, want := range []string{
				"hi-unix-socket unix: errno 1 ", "hi-unix-socket ws: errno 1 ",
				"dgram-socketpair: errno 1 ", "vsock-socket: errno 1 ", "hi-tiocsti: errno 1 ",
			} {
				if !strings.Contains(r.out, want) {
					t.Errorf("want %q (EPERM, by the filter) in:\n%s", want, r.out)
				}
			}
		})
	}
}

// listenDgram binds a host Unix datagram socket at path, writable by every
// user, and counts the datagrams it receives.
func listenDgram(t *testing.T, path string) *atomic.Int32 {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	must(t, os.Chmod(path, 0o777))
	var n atomic.Int32
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	return &n
}
