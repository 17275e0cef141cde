//go:build !linux

package relay

// copy moves src to dst until src's EOF (nil) or an error.
func (d *direction) copy() error { return d.readWrite() }
