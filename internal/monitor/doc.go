// Package monitor watches every node all the time, as the monitor account: reachability and
// round-trip time, read_only, server id, GTID positions, replication status, connection counts.
// It measures each replica's lag from GTID positions (how long ago the primary first moved past
// what the replica has applied) and publishes what it saw to the topology, one snapshot per
// round: routing reads that snapshot and never waits on the monitor. Each round also gives its
// verdicts on the replicas (verdicts.go): errant (transactions the primary does not hold),
// broken (replication stopped with an error), unsynced (the primary's position went backwards),
// and warns about replicas that run with read_only off.
//
// One goroutine per node checks it every Interval; one more gathers the results each round,
// computes lag against the primary's recent positions, and publishes. Everything is started by
// Run and ends with its context.
package monitor
