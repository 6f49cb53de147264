// Package mysql implements the MySQL client/server wire protocol as sluice needs it on both of
// its sides: packet framing with sequence ids and 16 MiB continuation, the handshake and
// authentication codecs, and the OK/ERR/EOF codecs including session-state tracking.
//
// Only the standard library is used. The packet layer is on the hot path: reading and relaying a
// packet does not allocate (buffers are owned by the Conn and reused), which the benchmarks guard.
package mysql
