//go:build !linux

package admission_test

import (
	"net"
	"os"
)

// connUID: without SO_PEERCRED the test's own uid stands in (both ends of
// a test socket are this process).
func connUID(net.Conn) int { return os.Getuid() }
