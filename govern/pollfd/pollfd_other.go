//go:build !linux

package pollfd

import "os"

// Stdin is os.Stdin.
func Stdin() *os.File { return os.Stdin }

// Stdout is os.Stdout.
func Stdout() *os.File { return os.Stdout }

// AwaitExit returns at once: Wait does the waiting.
func AwaitExit(*os.Process) {}

// Restore has nothing to restore: Stdin and Stdout are left as they are.
func Restore() {}
