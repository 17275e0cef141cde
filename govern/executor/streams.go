package executor

import (
	"io"
	"os"
	"time"
)

// streams are the command's stdout and stderr pipes and the copies that
// drain them into the caller's writers under the output cap.
type streams struct {
	outR, outW, errR, errW *os.File
	copied                 chan struct{}
	out, err               Stream
}

func newStreams() (*streams, error) {
	s := &streams{copied: make(chan struct{}, 2)}
	var err error
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if s.errR, s.errW, err = os.Pipe(); err != nil {
		s.outR.Close()
		s.outW.Close()
		return nil, err
	}
	return s, nil
}

// copy starts draining both pipes.
func (s *streams) copy(stdout, stderr io.Writer, limit int64) {
	go func() { s.out = capCopy(stdout, s.outR, limit); s.copied <- struct{}{} }()
	go func() { s.err = capCopy(stderr, s.errR, limit); s.copied <- struct{}{} }()
}

// closeWriters drops this process's copies of the write ends, once the
// child holds its own.
func (s *streams) closeWriters() {
	s.outW.Close()
	s.errW.Close()
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
			s.outR.Close()
			s.errR.Close()
			<-s.copied
		}
	}
	s.outR.Close()
	s.errR.Close()
	return s.out, s.err
}

// abort closes everything when the command never started.
func (s *streams) abort() {
	for _, f := range []*os.File{s.outR, s.outW, s.errR, s.errW} {
		f.Close()
	}
}
