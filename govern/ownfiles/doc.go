// Package ownfiles is the gateway's own files: what configures it, the
// programs it starts, and the directories it keeps its state and sockets
// in. It refuses a configuration that something the gateway runs could
// rewrite, and lists what every run must not see.
package ownfiles
