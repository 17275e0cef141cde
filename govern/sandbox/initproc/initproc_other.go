//go:build !linux

package initproc

// Main has nothing to set up where there is no sandbox.
func Main() error { return ErrUnsupported }
