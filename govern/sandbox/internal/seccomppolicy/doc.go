// Package seccomppolicy is the seccomp policy installed on every sandboxed
// command, assembled with golang.org/x/net/bpf from go-seccomp-bpf's
// system-call tables (Linux only). The sandbox ships it assembled
// (seccomp_prog_linux_amd64.go, by go generate): linking the tables would
// cost every sandboxrun start.
package seccomppolicy
