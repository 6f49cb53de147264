package binlog

import (
	"context"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
)

// Ending a binlog dump cleanly. A dump thread reads no commands, so a COM_QUIT would never be
// read: closing the stream's socket ends the dump only when the node next writes to it (an
// event, a heartbeat), which fails, and the node counts an aborted client and logs "Aborted
// connection ... (Got an error writing communication packets)". KILL CONNECTION of the dump
// thread (what go-mysql's BinlogSyncer.Close sends) is counted in Aborted_clients too, only
// not logged. KILL QUERY is not counted: the dump stops, the node sends its error and ends the
// connection itself, as after any binlog dump (MariaDB 10.11, measured: Aborted_clients and
// the error log unchanged; TestStreamEndsCleanly). So the stream's end sends KILL QUERY for
// its dump thread over a connection of its own (which says goodbye), then waits for the node to
// close the dump's connection before closing anything itself. (MySQL ends a dump's connection
// after any COM_BINLOG_DUMP_GTID too; whether it counts a KILL QUERY there was not measured.)

// goodbyeTimeout bounds the whole goodbye: the connection for the KILL QUERY (dial, login), the
// KILL, and the wait for the node to end the dump. Past it, the stream's sockets are closed as
// before (the dump then ends at the node's next write, counted as aborted).
const goodbyeTimeout = time.Second

// endDump ends the binlog dump on l (the syncer's connection) from the node's side: KILL QUERY
// for its thread, over a new connection as the stream's account that says goodbye, then a
// wait for the node to close l. Nothing when l has ended already, or its thread is not known.
// Bounded by goodbyeTimeout.
func (s *stream) endDump(l *link) {
	id := l.id.Load()
	if id == 0 {
		return
	}
	select {
	case <-l.ended:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), goodbyeTimeout)
	defer cancel()
	o := backend.Options{
		Address:         s.o.Address,
		Credentials:     backend.Credentials{User: s.o.User, Password: s.o.Password, HasPassword: true},
		ConnectTimeout:  goodbyeTimeout,
		TLS:             s.o.TLS,
		TLSRequired:     s.o.TLS != nil,
		ServerPublicKey: s.o.PublicKey,
	}
	c, err := backend.Dial(ctx, o)
	if err != nil {
		s.log.Debug("binlog: ending the dump: no connection for KILL QUERY; closing it", "err", err)
		return
	}
	dl, _ := ctx.Deadline()
	_ = c.NetConn().SetDeadline(dl)
	err = c.Exec("KILL QUERY " + strconv.FormatUint(uint64(id), 10))
	c.Quit()
	if err != nil {
		s.log.Debug("binlog: ending the dump: KILL QUERY failed; closing it", "thread", id, "err", err)
		return
	}
	select {
	case <-l.ended:
	case <-ctx.Done():
		s.log.Debug("binlog: ending the dump: the node did not close it in time; closing it", "thread", id)
	}
}
