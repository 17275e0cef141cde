package shell

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestKernelShebang(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		body, interp, arg string
		ok                bool
	}{
		{body: "#!/bin/sh\n", interp: "/bin/sh", ok: true},
		{body: "#! \t/bin/bash  -e -u \t\nx", interp: "/bin/bash", arg: "-e -u", ok: true},
		{body: "#!b.sh\n", interp: "b.sh", ok: true},
		{body: "#!/bin/sh", interp: "/bin/sh", ok: true}, // no newline: the buffer's NUL padding ends it
		{body: "#!\n"},
		{body: "#!   \n"},
		{body: "#!/" + long + "\n"}, // cut off at 256 bytes: ENOEXEC
		{body: "#!/bin/sh " + long + "\n", interp: "/bin/sh", arg: long[:245], ok: true}, // the argument may be cut
		{body: "#!/bin/sh\x00x\n", interp: "/bin/sh", ok: true},
		{body: "#!/bin/sh -e\x00x\n", interp: "/bin/sh", arg: "-e", ok: true},
	} {
		interp, arg, ok := kernelShebang([]byte(c.body))
		assert.Equal(t, ok, c.ok, "%q", c.body)
		assert.Equal(t, interp, c.interp, "%q", c.body)
		assert.Equal(t, arg, c.arg, "%q", c.body)
	}
}

// FuzzKernelShebang: never a panic; an interpreter is one word.
func FuzzKernelShebang(f *testing.F) {
	f.Add([]byte("#!/usr/bin/env -S bash -e\n"))
	f.Add([]byte("#!" + strings.Repeat(" ", 300)))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) < 2 || string(body[:2]) != "#!" {
			return
		}
		interp, arg, ok := kernelShebang(body)
		if ok && (interp == "" || strings.ContainsAny(interp, " \t\n\x00")) || !ok && (interp != "" || arg != "") {
			t.Fatalf("%q: interp %q arg %q ok %v", body, interp, arg, ok)
		}
	})
}
