// Package route decides where each statement goes: a pure function (Decide) over the
// statement's classification, the session's routing state, the endpoint's policy and an
// immutable topology snapshot. It does no I/O, so every routing rule is a table test.
//
// Every decision of where a statement goes is made here: the first (Decide), and the ones after
// a try failed (Retry, given the failed try and why: a node that failed it, a consistency wait
// that timed out, a replica that refused the statement's prepared form or the session's state;
// Reroute for a read whose replica failed). The session's routing state (Session) learns from
// each statement's outcome (Learn): the transaction its node reports, and the pins that keep it
// on the primary (temporary tables, LOCK TABLES, GET_LOCK, SETs that cannot be replayed,
// batches), and the node whose diagnostics area holds the session's warnings (DiagNode: SHOW
// WARNINGS and @@warning_count go there, not merely where the previous statement ran). The proxy reports outcomes and carries decisions out; it builds no Decision itself.
//
// Nothing that can change a node goes to a replica, whatever wraps it (a batch behind START
// TRANSACTION READ ONLY or FOUND_ROWS(), SET STATEMENT … FOR, EXECUTE IMMEDIATE, PREPARE, a
// hint) and whatever the session holds (a read-only transaction on a replica takes only reads
// and session statements: replicaTxAllows): the replica connections' read-only guard does not
// stop ANALYZE TABLE, FLUSH, RESET MASTER, SET GLOBAL or SELECT … INTO OUTFILE, and is a second
// line only (TestNodeChangingNeverOnReplica). Reads, bindings and hints go only to nodes the
// snapshot calls routable (topology.Snapshot.Routable): a hint never keeps a drain from ending.
//
// Which nodes take an endpoint's reads is said by the same rules pickReplica chooses by
// (Settings.eligibility): ReadEligibility and WhyNoReads give the admin API and SHOW NODES each
// endpoint's verdict on each node, looking at the lag gate without changing it. A node's lag
// alone says nothing of that: the threshold is the endpoint's.
//
// The one piece of mutable state is in the balancing policies (the smooth weighted round robin
// keeps its current weights) and in the live per-node counters the least-active policy reads;
// both are safe for concurrent use.
package route
