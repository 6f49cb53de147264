// Package topology owns what sluice knows about its nodes: their identity and configuration
// (Node), this proxy's live counters on each (Load), and their state as last checked (up or
// down). It publishes that state as an immutable Snapshot through an atomic pointer: routing
// reads the current snapshot without a lock and never waits on a check.
//
// Sessions do not change node state themselves: a session that fails to reach a node reports
// it (Topology.NodeFailed), and the topology decides. A node reported failed is taken out of
// routing at once and probed every ProbeInterval until it answers again.
//
// The package does no network I/O of its own: the probe is a function the composition root
// supplies (it dials the node with the backend package), so routing, which reads Snapshot,
// stays free of I/O. It also holds the flavour-specific queries that read a node's position
// and replication state (position.go), shared by the sandbox and the monitor.
package topology
