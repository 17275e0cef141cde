//go:build !unix

package config

import (
	"errors"
	"io/fs"
)

// ErrUnsupported: this platform cannot say who owns a credential file, so
// file credentials are refused (the governed shell does not run here).
var ErrUnsupported = errors.New("credential files are not supported on this platform")

func checkOwner(fs.FileInfo) error { return ErrUnsupported }
