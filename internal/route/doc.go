// Package route decides where each statement goes: a pure function (Decide) over the
// statement's classification, the session's routing state, the endpoint's policy and an
// immutable topology snapshot. It does no I/O, so every routing rule is a table test.
//
// The one piece of mutable state is in the balancing policies (the smooth weighted round robin
// keeps its current weights) and in the live per-node counters the least-active policy reads;
// both are safe for concurrent use.
package route
