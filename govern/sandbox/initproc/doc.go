// Package initproc is the sandbox's first process: it becomes the command
// after setting up what bubblewrap cannot (the environment, rlimits, the
// egress listener); it imports as little as possible so that it starts fast.
package initproc
