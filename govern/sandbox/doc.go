// Package sandbox runs one judged command inside a kernel sandbox
// (bubblewrap, seccomp, namespaces, cgroup or rlimit bounds) and reports the
// isolation and the limits that actually held.
package sandbox
