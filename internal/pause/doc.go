// Package pause is a wait that a context cuts short: what the binlog streamer (between
// reconnects), the app (between account refreshes) and the sandbox (between polls of a process
// or a port) each wrote for themselves. It imports nothing of sluice's, so any package may use it.
package pause
