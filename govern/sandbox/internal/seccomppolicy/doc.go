// Package seccomppolicy is the seccomp policy installed on every sandboxed
// command, assembled with go-seccomp-bpf (Linux only). The sandbox ships it
// assembled (seccomp_prog_linux_amd64.go, by go generate): linking the
// assembler would cost every sandboxrun start its system-call tables.
package seccomppolicy
