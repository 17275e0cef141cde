//go:build linux && !amd64

package sandbox

import "github.com/mitrity/mitrity/govern/sandbox/internal/seccomppolicy"

// nativeProgram is assembled at start where no program was generated
// (go generate writes one per architecture it runs on).
var nativeProgram = func() []byte {
	b, err := seccomppolicy.Bytes()
	if err != nil {
		return nil
	}
	return b
}()
