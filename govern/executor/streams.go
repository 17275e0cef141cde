package executor

import (
	"io"
	"os"
	"time"
)

// streams are the command's stdout and stderr pipes and the copies that
// drain them into the caller's writers under the output cap. A served
// program's stdout (an upstream server's protocol pipe) can be handed to
// it as it is: no copy, no cap, no count.
type streams struct {
	outR, outW, errR, errW *os.File
	direct                 bool // outW is the caller's, outR nil
	copied                 chan struct{}
	out, err               Stream
}

// newStreams makes the pipes; direct, when set, is the command's stdout
// itself (Serve's protocol pipe only: a command's output is always
// copied, capped and redacted).
func newStreams(direct *os.File) (*streams, error) {
	s := &streams{copied: make(chan struct{}, 2)}
	var err error
	if direct != nil {
		s.outW, s.direct = direct, true
	} else if s.outR, s.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if s.errR, s.errW, err = os.Pipe(); err != nil {
		if !s.direct {
			s.outR.Close()
			s.outW.Close()
		}
		return nil, err
	}
	return s, nil
}

// copy starts draining both pipes.
func (s *streams) copy(stdout, stderr io.Writer, limit int64) {
	if s.direct {
		s.copied <- struct{}{}
	} else {
		go func() { s.out = capCopy(stdout, s.outR, limit); s.copied <- struct{}{} }()
	}
	go func() { s.err = capCopy(stderr, s.errR, limit); s.copied <- struct{}{} }()
}

// closeWriters drops this process's copies of the write ends, once the
// child holds its own (a direct stdout stays the caller's to close).
func (s *streams) closeWriters() {
	if !s.direct {
		s.outW.Close()
	}
	s.errW.Close()
}

// closeReaders ends the copies.
func (s *streams) closeReaders() {
	if !s.direct {
		s.outR.Close()
	}
	s.errR.Close()
}

// finish waits for both copies to reach EOF, at most grace: a process that
// escaped the run may still hold a pipe open, and the output is cut there.
func (s *streams) finish(grace time.Duration) (stdout, stderr Stream) {
	s.closeWriters()
	t := time.NewTimer(grace)
	defer t.Stop()
	for i := 0; i < 2; i++ {
		select {
		case <-s.copied:
		case <-t.C:
			s.closeReaders()
			<-s.copied
		}
	}
	s.closeReaders()
	return s.out, s.err
}

// abort closes everything when the command never started.
func (s *streams) abort() {
	s.closeWriters()
	s.closeReaders()
}
