package service

import (
	"bytes"
	"io"

	"github.com/mitrity/mitrity/govern/dlp"
)

// outputStream is one stream's redaction chain: credential values first
// (every variant), then the agent's DLP detectors, each holding back only
// what a later byte could still turn into a match; what comes out is kept
// for the audit and the agent and, when live is set, passed on as it
// arrives (the relay streams it).
type outputStream struct {
	cred *dlp.Stream
	det  *dlp.DetectorStream
	buf  bytes.Buffer
}

func newOutputStream(red *dlp.Redactor, b dlp.Bindings, name string, live Output) *outputStream {
	o := &outputStream{}
	var sink io.Writer = &o.buf
	if live != nil {
		sink = io.MultiWriter(&o.buf, liveWriter{name: name, f: live})
	}
	o.det = b.Stream(sink)
	o.cred = red.Stream(o.det)
	return o
}

func (o *outputStream) Write(p []byte) (int, error) { return o.cred.Write(p) }

// Close flushes what each stage held back.
func (o *outputStream) Close() error {
	o.cred.Close()
	return o.det.Close()
}

func (o *outputStream) redactions() int { return o.cred.Total() + o.det.Total() }

type liveWriter struct {
	name string
	f    Output
}

func (w liveWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.f(w.name, bytes.Clone(p))
	}
	return len(p), nil
}
