package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/pollfd"
)

// The client half of mitrity-egressproxy: the gateway's side of the
// per-execution proxy whose server half is Serve (this package, run by the
// mitrity-egressproxy binary). A Process is one execution's proxy: its
// socket made before the sandbox looks for it, the process started at the
// run's first connection, its report read when the run ends.

// BinaryName is the per-execution proxy binary the gateway spawns.
const BinaryName = "mitrity-egressproxy"

const (
	// proxyStopWait bounds how long a stopped proxy has to write its report
	// and exit: its own Close waits up to 5 s for handlers still deciding.
	proxyStopWait = 10 * time.Second
	// maxProxyOutput bounds what is read of the proxy's stdout (ready, then
	// one report line).
	maxProxyOutput = 1 << 20
	// proxyLogTail is how much of the proxy's stderr is kept to explain a
	// proxy that failed.
	proxyLogTail = 4 << 10
	// maxLogLine bounds one log line of the proxy.
	maxLogLine = 64 << 10
)

// FindBinary finds mitrity-egressproxy as the gateway finds its other
// helpers: beside the running binary (make build installs them together),
// else in PATH. It returns "" when there is none.
func FindBinary() string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), BinaryName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(BinaryName); err == nil && filepath.IsAbs(p) {
		return p
	}
	return ""
}

// Process is the mitrity-egressproxy of one execution: its socket from
// the start, its process from the first connection on.
type Process struct {
	path, level string
	conf        []byte
	logTo       io.Writer
	dir         string // private, 0700; holds the socket
	socket      string

	mu       sync.Mutex
	ln       *os.File // the listening socket: the gateway's, until the process takes it
	launched bool
	closing  bool
	watched  chan struct{} // closed when watch has returned

	cmd      *exec.Cmd
	stdin    *os.File // the config goes out here; closing it stops the proxy
	outR     *os.File
	logR     *os.File
	started  chan struct{} // closed once Start returned and the config is written
	reported chan struct{} // closed when its stdout gave a report line, or ended
	exited   chan struct{} // closed when the process is gone (or never started)
	// Set before the channel that publishes them is closed.
	startErr error
	out      bytes.Buffer // what followed "ready": the report line
	log      *tailBuffer
	waitErr  error
}

// ProcessOptions are what one execution's proxy is started with.
type ProcessOptions struct {
	// Path is mitrity-egressproxy (FindBinary); "" is an error.
	Path string
	// Config is the host's settings with the run's allowlist.
	Config Config
	// Log receives the proxy's log lines (one egress.decision line per
	// decision, at Level and above); nil: they are only kept, the last
	// few KiB, to explain a proxy that failed. Level defaults to warn.
	Log   io.Writer
	Level string
}

// PrepareProcess makes the socket of one execution's proxy: listening, in
// a private directory, before the sandbox looks for it. The process is not
// started yet: Watch starts it when the run makes its first connection,
// which waits in the backlog meanwhile. A command that never connects
// (most do not) costs no proxy at all, and one that does pays the proxy's
// start-up once the sandbox is up rather than beside bubblewrap's. What can
// fail is checked now, so that a missing proxy never lets a command start.
func PrepareProcess(o ProcessOptions) (*Process, error) {
	if o.Path == "" {
		return nil, errors.New(BinaryName + " was not found next to the gateway or in PATH; a plan with an egress allowlist needs it")
	}
	cfg := o.Config
	// A bad allowlist is this run's clear error, not a proxy that exits.
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(o.Path); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Path, err)
	} else if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("starting %s: permission denied: not an executable file", o.Path)
	}
	px := &Process{
		path: o.Path, level: o.Level, logTo: o.Log,
		watched: make(chan struct{}),
		started: make(chan struct{}), reported: make(chan struct{}), exited: make(chan struct{}),
		log: &tailBuffer{max: proxyLogTail},
	}
	if px.level == "" {
		px.level = "warn"
	}
	var err error
	if px.conf, err = json.Marshal(cfg); err != nil {
		return nil, err
	}
	// In the gateway's runtime directory, which every run masks: under a
	// shared temporary directory another run could find the socket.
	rt, err := govern.MakeRuntimeDir(os.Geteuid(), os.Getenv)
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(func() { sweepStaleDirs(rt) })
	if px.dir, err = os.MkdirTemp(rt, ProcessDirPrefix+strconv.Itoa(os.Getpid())+"-"); err != nil {
		return nil, err
	}
	ln, err := listenPrivate(px.dir)
	if err != nil {
		os.RemoveAll(px.dir)
		return nil, err
	}
	px.socket = ln.Addr().String()
	// Held as a file: unlike a listener, a file can be waited on without
	// accepting, and it is what the process inherits.
	px.ln, err = ln.File()
	ln.Close()
	if err != nil {
		os.RemoveAll(px.dir)
		return nil, err
	}
	return px, nil
}

// Socket is the proxy's socket, for the sandbox's bridge.
func (px *Process) Socket() string { return px.socket }

// ProcessOutcome is what became of a supervised proxy.
type ProcessOutcome struct {
	// Report is the proxy's account of the run; nil when it gave none
	// (Error says why).
	Report *Report
	Error  string
	// Died is set when the proxy ended (or could not start) before it was
	// stopped: the run's context was cancelled for it.
	Died bool
}

// SuperviseProcess prepares the proxy of a run and watches it. The proxy
// starts at the run's first connection; if it dies (or cannot start)
// before the run ends, the returned context is cancelled: the run's
// connections are refused either way, and a command that expected a
// network should not carry on without it. finish, called once the command
// has ended, stops the proxy and says what became of it.
func SuperviseProcess(ctx context.Context, o ProcessOptions) (px *Process, runCtx context.Context, finish func() ProcessOutcome, err error) {
	if px, err = PrepareProcess(o); err != nil {
		return nil, ctx, nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go px.Watch(func() {
		select {
		case <-stopped:
		default:
			cancel()
		}
	})
	finish = func() ProcessOutcome {
		defer cancel()
		died := isClosed(px.exited)
		close(stopped)
		rep, err := px.Stop()
		if died {
			// Whatever it counted is lost.
			return ProcessOutcome{Error: px.failure(), Died: true}
		}
		o := ProcessOutcome{Report: rep}
		if err != nil {
			o.Error = err.Error()
		}
		return o
	}
	return px, runCtx, finish, nil
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ProcessDirPrefix starts the name of every run's socket directory, which
// goes on with the gateway's pid: mitrity-egress-<pid>-<random>.
const ProcessDirPrefix = "mitrity-egress-"

var sweepOnce sync.Once

// sweepStaleDirs removes the socket directories of gateways that are gone.
// A gateway removes its own when each run ends, but one that was SIGKILLed
// could not. Only this user's private directories holding nothing but a
// socket are touched; a directory whose pid was reused is left alone.
func sweepStaleDirs(rt string) {
	dirs, _ := filepath.Glob(filepath.Join(rt, ProcessDirPrefix+"*-*"))
	for _, d := range dirs {
		pidPart, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), ProcessDirPrefix), "-")
		pid, err := strconv.Atoi(pidPart)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processExists(pid) {
			continue
		}
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ownedByMe(fi) {
			continue
		}
		entries, err := os.ReadDir(d)
		if err != nil || len(entries) > 1 || (len(entries) == 1 && (entries[0].Name() != "proxy.sock" || entries[0].Type() != os.ModeSocket)) {
			continue
		}
		os.RemoveAll(d)
	}
}

// listenPrivate listens on a socket in dir, which only this user can
// enter (MkdirTemp makes it 0700): the directory keeps everyone else out,
// and the socket is then made 0600 too. Not the umask: it is process-wide,
// and tightening it around bind would give 0600 to whatever another run
// creates at that instant (a working directory, a credential directory).
func listenPrivate(dir string) (*net.UnixListener, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm() != 0o700 {
		return nil, fmt.Errorf("socket directory %s is %v, not private (0700)", dir, fi.Mode().Perm())
	}
	path := filepath.Join(dir, "proxy.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The path stays for the sandbox; the directory goes when the run ends.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Watch waits for the first connection on the socket, then launches the
// proxy, unless Stop came first. died is called if the proxy exits (or
// cannot start) before it is stopped.
func (px *Process) Watch(died func()) {
	defer close(px.watched)
	rc, err := px.ln.SyscallConn()
	if err == nil {
		// Readiness alone is not enough: the poller forgets an event that
		// came before the wait, so each wake-up asks the kernel whether a
		// connection is queued.
		err = rc.Read(pendingConn)
	}
	px.mu.Lock()
	if px.closing {
		px.mu.Unlock()
		return
	}
	px.launched = true
	px.mu.Unlock()
	if err != nil {
		px.ln.Close()
		px.startErr = fmt.Errorf("waiting for the run's first connection: %w", err)
		px.noProcess()
		died()
		return
	}
	px.launch(died)
}

// launch starts the proxy on the socket and supervises it until it exits.
// It runs on a goroutine of its own, which holds its thread for as long as
// the proxy lives: the parent-death signal follows that thread.
func (px *Process) launch(died func()) {
	release := holdThread()
	defer release()
	if err := px.start(); err != nil {
		px.startErr = fmt.Errorf("starting %s: %w", px.path, err)
		px.noProcess()
		died()
		return
	}
	// Up to the pipe's size this never blocks; a larger allowlist waits
	// for the proxy to read it, still off the run's path.
	_, _ = px.stdin.Write(px.conf)
	close(px.started)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		px.readLog()
	}()
	px.readOutput()
	<-logged
	px.waitErr = pollfd.Wait(px.cmd)
	close(px.exited)
	died()
}

// start spawns the process with the socket as its descriptor 3, the
// configuration pipe as stdin, the report pipe as stdout and a log pipe as
// stderr. The gateway's copy of the socket is closed once the proxy holds
// its own: from then on the socket lives exactly as long as the proxy.
func (px *Process) start() error {
	lnFile := px.ln
	child := []*os.File{lnFile}
	defer func() {
		for _, f := range child {
			f.Close()
		}
	}()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return err
	}
	child = append(child, stdinR)
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinW.Close()
		return err
	}
	child = append(child, outW)
	logR, logW, err := os.Pipe()
	if err != nil {
		stdinW.Close()
		outR.Close()
		return err
	}
	child = append(child, logW)
	px.cmd = &exec.Cmd{
		Path: px.path,
		Args: []string{BinaryName, "--log-level", px.level, "--log-format", "json", "serve",
			"--listen-fd", "3", "--parent-pid", strconv.Itoa(os.Getpid())},
		// Nothing of the gateway's: no proxy variables, no secrets. The
		// processor count is the gateway's, so the proxy's runtime need not
		// read the cgroup files to size itself.
		Env:        []string{"GOMAXPROCS=" + strconv.Itoa(runtime.GOMAXPROCS(0))},
		Dir:        "/",
		Stdin:      stdinR,
		Stdout:     outW,
		Stderr:     logW,
		ExtraFiles: []*os.File{lnFile},
	}
	if err := startDying(px.cmd); err != nil {
		stdinW.Close()
		outR.Close()
		logR.Close()
		return err
	}
	px.stdin, px.outR, px.logR = stdinW, outR, logR
	return nil
}

// noProcess settles the channels of a proxy that never ran.
func (px *Process) noProcess() {
	close(px.started)
	close(px.reported)
	close(px.exited)
}

// readOutput reads "ready", then the report line, and then drains stdout
// to its end, so the proxy never blocks on a full pipe.
func (px *Process) readOutput() {
	defer px.outR.Close()
	br := bufio.NewReader(io.LimitReader(px.outR, maxProxyOutput))
	reported := func() {
		select {
		case <-px.reported:
		default:
			close(px.reported)
		}
	}
	defer reported()
	line, err := br.ReadString('\n')
	if err != nil || line != "ready\n" {
		px.out.WriteString(line)
		_, _ = px.out.ReadFrom(br)
		return
	}
	line, _ = br.ReadString('\n')
	px.out.WriteString(line)
	reported()
	_, _ = io.Copy(io.Discard, br)
	_, _ = io.Copy(io.Discard, px.outR)
}

// readLog keeps the tail of the proxy's log and hands it on line by line,
// one Write a line, so that the lines of concurrent runs' proxies never
// interleave in the gateway's log.
func (px *Process) readLog() {
	defer px.logR.Close()
	sc := bufio.NewScanner(px.logR)
	sc.Buffer(make([]byte, 0, 4<<10), maxLogLine)
	for sc.Scan() {
		line := append(sc.Bytes(), '\n')
		px.log.Write(line)
		if px.logTo != nil {
			px.logTo.Write(line)
		}
	}
	// A line longer than maxLogLine ends the scan: drain the rest, so the
	// proxy never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, px.logR)
}

// Stop ends the proxy (closing its stdin is its stop signal) and returns
// its report as soon as the report line is in: the process exits right
// after, on its own, still watched by launch. A proxy that does not report
// in time is killed and gives none. A proxy never launched (no connection
// was ever made) reports nothing allowed and nothing refused, which is the
// truth. The socket's directory is removed.
func (px *Process) Stop() (*Report, error) {
	defer os.RemoveAll(px.dir)
	px.mu.Lock()
	px.closing = true
	launched := px.launched
	if !launched {
		px.ln.Close() // ends watch's wait
	}
	px.mu.Unlock()
	if !launched {
		<-px.watched
		return &Report{DeniedHosts: []string{}, Denials: []DeniedDestination{}}, nil
	}
	t := time.NewTimer(proxyStopWait)
	defer t.Stop()
	select {
	case <-px.started:
	case <-t.C:
		if px.cmd != nil && px.cmd.Process != nil {
			_ = px.cmd.Process.Kill() // stuck reading its configuration
		}
		<-px.started
	}
	if px.stdin != nil {
		px.stdin.Close()
	}
	select {
	case <-px.reported:
	case <-t.C:
		_ = px.cmd.Process.Kill()
		<-px.reported
	}
	return px.report()
}

// report parses the report line.
func (px *Process) report() (*Report, error) {
	if px.startErr != nil {
		return nil, px.startErr
	}
	var rep Report
	line := bytes.TrimSpace(px.out.Bytes())
	if err := json.Unmarshal(line, &rep); err != nil {
		if isClosed(px.exited) && px.waitErr != nil {
			return nil, fmt.Errorf("%s: %v%s", BinaryName, px.waitErr, px.log.said())
		}
		return nil, fmt.Errorf("%s gave no report (%q)%s", BinaryName, truncate(string(line), 200), px.log.said())
	}
	return &rep, nil
}

// failure explains a proxy that ended before it was stopped.
func (px *Process) failure() string {
	switch {
	case px.startErr != nil:
		return px.startErr.Error()
	case px.waitErr != nil:
		return fmt.Sprintf("%s exited: %v%s", BinaryName, px.waitErr, px.log.said())
	}
	return BinaryName + " exited before it was stopped" + px.log.said()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// said is ": <last log line>" when the proxy logged anything.
func (t *tailBuffer) said() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + truncate(s, 500)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
