// Package regfile opens a file the gateway reads as its own input (config,
// policy, token file, CA bundle) only when it is a regular file, without
// waiting on a named pipe.
package regfile
