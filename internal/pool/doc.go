// Package pool keeps node connections between client sessions: the session-level pool of
// pool_mode session. A connection leaves a session only in a known clean state (the proxy
// reset it with COM_RESET_CONNECTION and checked it); the pool keeps it idle, hands it to the
// next session of the same user for the same node, and closes it when it has been idle past
// idle_timeout, lived past max_lifetime, or its node left.
//
// Connections are grouped by (node, user): max_per_node counts a group's open connections,
// idle and in use, and a Get at the limit waits (up to acquire_timeout) for a Put or a close,
// first come, first served: each Put or close wakes the first waiter only (pool.go, Take).
// Within a group, an idle connection is handed out only for the same Variant: what was fixed
// when the connection was opened and a reset does not undo (the client capabilities it was
// opened with, its handshake character set, TLS, read-only mode, the client address a PROXY
// protocol header told its node).
//
// A group may keep a floor of idle connections (Limits.MinIdle): Fill, run from the caller's
// periodic tick, opens them in the background as the group's last session opened its own, and
// IdleTimeout closes only the idle connections beyond that floor (fill.go says how they meet).
//
// The pool is touched when a session opens or releases a node connection, never per
// statement. It does no protocol work itself: it is generic over the connection type, and the
// caller gives it how to ping and how to close one (Ops). The proxy owns the reset.
package pool
