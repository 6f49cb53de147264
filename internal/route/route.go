package route

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// Mode is an endpoint's mode.
type Mode uint8

const (
	ReadWrite Mode = iota // writes to the primary, reads balanced
	ReadOnly              // each session bound to one replica; the primary never used
)

// String returns the configuration spelling of the mode.
func (m Mode) String() string {
	if m == ReadOnly {
		return "read-only"
	}
	return "read-write"
}

// ParseMode reads a mode as the configuration spells it.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "read-write":
		return ReadWrite, nil
	case "read-only":
		return ReadOnly, nil
	}
	return ReadWrite, fmt.Errorf("unknown endpoint mode %q (want read-write or read-only)", s)
}

// Consistency is what a read on a replica must see.
type Consistency uint8

const (
	// Eventual: any replica within the endpoint's max lag.
	Eventual Consistency = iota
	// SessionConsistency: everything the session itself committed.
	SessionConsistency
	// Global: everything committed on the primary before the read arrived.
	Global
	// Latest: everything sluice knew to be committed when the read arrived: every commit
	// acknowledged to any of its sessions, and the primary's binlog as its stream delivered it.
	Latest
)

// ParseConsistency reads a consistency level from the configuration.
func ParseConsistency(s string) (Consistency, error) {
	switch s {
	case "", "eventual":
		return Eventual, nil
	case "session":
		return SessionConsistency, nil
	case "global":
		return Global, nil
	case "latest":
		return Latest, nil
	}
	return Eventual, fmt.Errorf("unknown consistency %q (want eventual, session, global or latest)", s)
}

func (c Consistency) String() string {
	switch c {
	case SessionConsistency:
		return "session"
	case Global:
		return "global"
	case Latest:
		return "latest"
	}
	return "eventual"
}

// Endpoint is one endpoint's routing policy, shared by all its sessions. Its settings sit
// behind an atomic pointer: a change (Update) reaches every live session at its next
// statement, and a statement sees one version of them, never a mix.
type Endpoint struct {
	name     string
	settings atomic.Pointer[Settings]
	gate     *lagGate // which replicas are set aside for lag; kept across updates
}

// MaxWeight is the largest read weight.
const MaxWeight = 10000

// NewEndpoint returns the endpoint called name with settings s.
func NewEndpoint(name string, s Settings) (*Endpoint, error) {
	e := &Endpoint{name: name, gate: &lagGate{out: make([]atomic.Bool, topology.MaxNodes)}}
	if err := e.Update(s); err != nil {
		return nil, err
	}
	return e, nil
}

// Name returns the endpoint's name.
func (e *Endpoint) Name() string { return e.name }

// Settings returns the settings in force. The caller must not modify them.
func (e *Endpoint) Settings() *Settings { return e.settings.Load() }

// Update checks s and puts it in force (a copy: the caller keeps s). Settings that do not fit
// the topology change nothing and return an error.
func (e *Endpoint) Update(s Settings) error {
	if len(s.Weights) > topology.MaxNodes {
		return fmt.Errorf("endpoint %s: %d read weights for at most %d nodes", e.name, len(s.Weights), topology.MaxNodes)
	}
	for i, w := range s.Weights {
		if w < 0 || w > MaxWeight {
			return fmt.Errorf("endpoint %s: read weight %d of node %d is out of 0..%d", e.name, w, i, MaxWeight)
		}
	}
	if s.Policy == nil {
		return fmt.Errorf("endpoint %s: no balancing policy", e.name)
	}
	if s.Mode != ReadWrite && s.Mode != ReadOnly {
		return fmt.Errorf("endpoint %s: unknown mode %d", e.name, s.Mode)
	}
	if s.MaxLag < 0 {
		return fmt.Errorf("endpoint %s: negative max_replica_lag", e.name)
	}
	s.Name, s.gate, s.unfit = e.name, e.gate, &unfitCache{}
	s.Weights = append([]int(nil), s.Weights...)
	e.settings.Store(&s)
	return nil
}

// Settings are an endpoint's routing settings. Immutable once published by Endpoint.Update.
type Settings struct {
	Name    string // the endpoint's, for error messages (set by Update)
	Mode    Mode
	Weights []int // read weight per node index (a node past the end has none: 0)
	Policy  Policy
	// SplitTx: in a transaction, reads before the first write go to a replica and the
	// transaction opens on the primary at its first write (read-write mode only).
	SplitTx bool
	// StrictMulti pins the session to the primary after any multi-statement batch.
	StrictMulti bool
	// NearestZone: reads go to the usable nodes of Zone (this proxy's), and to all usable
	// nodes when that zone has none.
	NearestZone bool
	Zone        string
	// MaxLag: a replica whose lag (the snapshot's NodeState) is past it takes no new reads, until
	// it is under three quarters of it again; 0: no limit.
	MaxLag time.Duration
	// Consistency is what a replica read must see; ConsistencyTimeout how long it may wait on
	// a replica for that, before it goes to the primary.
	Consistency        Consistency
	ConsistencyTimeout time.Duration

	gate  *lagGate    // the endpoint's (set by Update); nil in Settings built by hand: no memory
	unfit *unfitCache // Unfit's last answer, this version's own (set by Update); nil: none kept
}

// lagGate remembers which replicas an endpoint set aside for lag, so that one hovering around
// the threshold does not flap: out past MaxLag, back in under three quarters of it. Safe for
// concurrent use (every session of the endpoint decides through it).
type lagGate struct {
	out []atomic.Bool
}

// usable reports whether replica i, in state st, may take new reads under maxLag, and
// remembers it.
func (g *lagGate) usable(i int, st *topology.NodeState, maxLag time.Duration) bool {
	ok, remember := g.judge(i, st, maxLag)
	if remember {
		g.out[i].Store(!ok)
	}
	return ok
}

// judge is usable's verdict without remembering it: whether replica i may take new reads, and
// whether the gate must change what it remembers of i for that (a view of the state, such as
// the admin API's, judges without changing it).
func (g *lagGate) judge(i int, st *topology.NodeState, maxLag time.Duration) (ok, remember bool) {
	if maxLag <= 0 {
		return true, false
	}
	lag, known := lagOf(st)
	if g == nil || i >= len(g.out) {
		return !known || lag <= maxLag, false
	}
	if !known {
		return !g.out[i].Load(), false // nothing new: as it was
	}
	if g.out[i].Load() {
		return lag < maxLag*3/4, lag < maxLag*3/4
	}
	return lag <= maxLag, lag > maxLag
}

// lagOf is a node's lag as the monitor measured it from GTID positions, else as the node
// reports it (Seconds_Behind_Master), and whether either is known.
func lagOf(st *topology.NodeState) (time.Duration, bool) {
	switch {
	case st == nil:
		return 0, false
	case st.LagKnown:
		return st.Lag, true
	case st.Replica != nil && st.Replica.SecondsBehind != nil:
		return time.Duration(*st.Replica.SecondsBehind) * time.Second, true
	}
	return 0, false
}

// Pin is a set of reasons a session must stay on the primary, where its state lives.
type Pin uint32

const (
	PinTempTable  Pin = 1 << iota // CREATE TEMPORARY TABLE, until dropped or the session ends
	PinLockTables                 // LOCK TABLES until UNLOCK TABLES
	PinGetLock                    // GET_LOCK until the locks are released
	PinSet                        // a SET sluice cannot replay on other nodes
	PinMulti                      // a multi-statement batch, or a statement too large to read whole, that may have left state behind

	// The pins below hold a session's node connection under pool_mode transaction only (the
	// proxy computes them; Session.Pins never has them but PinUserVar, and they send nothing to
	// the primary): state sluice cannot move to another connection, until it is released.
	PinCursor     // a cursor open (COM_STMT_EXECUTE with a cursor), until it is closed or read to its end
	PinSQLPrepare // an SQL PREPARE: the named statement lives on the connection, until the session ends
	PinWarnings   // the connection holds the session's warnings, until a statement that clears them
	PinLongData   // COM_STMT_SEND_LONG_DATA sent to the node, until the EXECUTE
	PinXA         // an XA transaction, until the session ends
	PinProgram    // a CALL, EXECUTE IMMEDIATE or unknown text may have left state sluice cannot name, until the session ends
	PinRowCount   // ROW_COUNT()/FOUND_ROWS() after a write or SQL_CALC_FOUND_ROWS: until the next statement
	PinInsertID   // LAST_INSERT_ID() could not be read back: until the session ends
	PinUserVar    // SET @a = …: a user variable lives on the primary's connection (route's pin; pool_mode transaction reads it back and restores it instead of holding the connection, unless it is too large to carry)
	PinNextTx     // SET TRANSACTION (the next transaction's characteristics): until BEGIN, COMMIT or ROLLBACK (the node keeps them until a transaction takes them)
	PinHandler    // HANDLER … OPEN: until the session ends
	PinSequence   // NEXTVAL/SETVAL/LASTVAL of a sequence: LASTVAL is the connection's, until the session ends

	// NumPins is how many pin reasons there are: bits 0 to NumPins-1.
	NumPins = 17
)

// PinNames are the pin reasons' names, by bit (PinNames[i] names Pin(1<<i)): what
// /v1/sessions, SHOW LAST ROUTE and the reason label of sluice_pinned_sessions say. They are an
// interface: a name, once given, never changes (README's table of pins).
var PinNames = [NumPins]string{"temporary_table", "lock_tables", "user_lock", "session_variable", "multi_statement",
	"cursor", "sql_prepare", "warnings", "long_data", "xa", "stored_program", "row_count", "last_insert_id", "user_variable", "next_transaction", "handler", "sequence"}

// Names appends the names of p's reasons to dst, in bit order.
func (p Pin) Names(dst []string) []string {
	for i, n := range PinNames {
		if p&(1<<i) != 0 {
			dst = append(dst, n)
		}
	}
	return dst
}

// String is p's names joined by commas ("" when p holds none).
func (p Pin) String() string { return strings.Join(p.Names(nil), ",") }

// Reason says why a statement went where it went.
type Reason uint8

const (
	ReasonWrite Reason = iota
	ReasonRead
	ReasonHint
	ReasonInTransaction
	ReasonTransactionStart
	ReasonLockingRead
	ReasonSessionFunction // LAST_INSERT_ID, GET_LOCK, sequences, user variables...
	ReasonPinned
	ReasonPrevious // FOUND_ROWS, SHOW WARNINGS: where the previous statement went
	ReasonUnknown
	ReasonFallback    // no replica can serve the read
	ReasonBound       // read-only endpoint: the session's replica
	ReasonSession     // session state (SET, USE): applied where the session runs, then replayed
	ReasonDeferredTx  // transaction splitting: BEGIN held until the first write
	ReasonReadOnlyTx  // START TRANSACTION READ ONLY on a replica
	ReasonPrimaryOnly // statements that only the primary answers meaningfully (SHOW MASTER STATUS...)
	ReasonMulti       // multi-statement batch
	ReasonConsistency // no replica reached the position the consistency level needs in time

	// NumReasons is how many reasons there are (for tables indexed by reason).
	NumReasons = int(ReasonConsistency) + 1
)

var reasonLabels = [...]string{
	ReasonWrite: "write", ReasonRead: "read", ReasonHint: "hint", ReasonInTransaction: "in_transaction",
	ReasonTransactionStart: "transaction_start", ReasonLockingRead: "locking_read",
	ReasonSessionFunction: "session_function", ReasonPinned: "pinned", ReasonPrevious: "previous_statement",
	ReasonUnknown: "unclassified", ReasonFallback: "fallback", ReasonBound: "bound_replica",
	ReasonSession: "session_state", ReasonDeferredTx: "transaction_deferred", ReasonReadOnlyTx: "read_only_transaction",
	ReasonPrimaryOnly: "primary_only", ReasonMulti: "multi_statement", ReasonConsistency: "consistency_fallback",
}

// Label is the reason as a metric label value: one word, lower case.
func (r Reason) Label() string {
	if int(r) < len(reasonLabels) {
		return reasonLabels[r]
	}
	return "unknown"
}

var reasonNames = [...]string{
	ReasonWrite: "write", ReasonRead: "read", ReasonHint: "hint", ReasonInTransaction: "in transaction",
	ReasonTransactionStart: "transaction start", ReasonLockingRead: "locking read",
	ReasonSessionFunction: "session function", ReasonPinned: "pinned", ReasonPrevious: "previous statement",
	ReasonUnknown: "unclassified", ReasonFallback: "fallback: no replica", ReasonBound: "bound replica",
	ReasonSession: "session state", ReasonDeferredTx: "transaction deferred", ReasonReadOnlyTx: "read-only transaction",
	ReasonPrimaryOnly: "primary only", ReasonMulti: "multi-statement",
	ReasonConsistency: "consistency: no replica reached the position",
}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Decision is where one statement goes.
type Decision struct {
	Node   int // index into the snapshot's nodes; -1 when Err is set or Local
	Reason Reason
	// Local: sluice answers the statement itself (a deferred BEGIN, or COMMIT of a transaction
	// that never reached a node).
	Local bool
	// EndTx: first end the read-only transaction the session holds on a replica (TxNode), as
	// the server ends a transaction implicitly (a new transaction, SET autocommit).
	EndTx bool
	Err   *mysql.SQLError
}

// Errors Decide returns. A node that cannot take the statement (down, draining, unknown, no
// replica left) is error 1105 (ER_UNKNOWN_ERROR, HY000) with sluice's message: a server code
// every client shows as it is, with no meaning a driver acts on (the client's connection is
// fine; the statement did not run). Never a client-side code such as 2003 (mysql.IsClientCode).
var (
	errReadOnly = func(ep string) *mysql.SQLError {
		return mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
			"The sluice endpoint '%s' is read-only: this statement cannot be executed there", ep)
	}
	errNoReplica = mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: no replica is available for /*FORCE_SLAVE*/")
	errHintWrite = mysql.NewError(mysql.ErrOptionPreventsStm, "HY000", "sluice: /*FORCE_SLAVE*/ cannot run a write or a statement of a transaction that wrote")
	// errReadOnlyTx is the server's answer to a write in a READ ONLY transaction; sluice gives
	// it for one on a replica, where the replica's read_only would answer 1290 first.
	errReadOnlyTx = mysql.NewError(1792, "25006", "Cannot execute statement in a READ ONLY transaction")
)

// needsPrimary reports whether a statement must run on the primary whatever the session state,
// and why.
func needsPrimary(c *classify.Result) (bool, Reason) {
	if c.Flags&classify.SetReadWrite != 0 && c.Kind != classify.Set {
		return true, ReasonWrite // SET STATEMENT tx_read_only = 0 FOR …: it could write
	}
	switch c.Kind {
	case classify.Select:
		const session = classify.LockFunction | classify.ReleaseLock | classify.LockQuery | classify.LastInsertID |
			classify.RowCount | classify.Sequence | classify.CalcFoundRows | classify.UserVar | classify.UserVarAssign |
			classify.ConnectionID
		switch {
		case c.Flags&classify.LockingRead != 0:
			return true, ReasonLockingRead
		case c.Flags&classify.SelectInto != 0:
			return true, ReasonWrite
		case c.Flags&session != 0:
			return true, ReasonSessionFunction
		}
		return false, ReasonRead
	case classify.Show:
		switch c.Show {
		case classify.ShowMasterStatus, classify.ShowBinlog, classify.ShowProcesslist, classify.ShowSlave:
			return true, ReasonPrimaryOnly
		}
		return false, ReasonRead
	case classify.Explain:
		if c.Flags&classify.ExplainWrite != 0 {
			return true, ReasonWrite
		}
		return false, ReasonRead
	case classify.Unknown:
		return true, ReasonUnknown
	}
	return true, ReasonWrite
}

// Decide routes one statement. stmt is the statement text (for the FORCE_NODE name).
func Decide(c *classify.Result, stmt []byte, s *Session, ep *Settings, snap *topology.Snapshot) Decision {
	if ep.Mode == ReadOnly {
		return decideReadOnly(c, s, ep, snap)
	}
	primary, why := needsPrimary(c)
	if c.Flags&classify.Multi != 0 {
		primary, why = true, ReasonMulti
	}

	// Hints come first: they are the operator's (or application's) explicit word.
	switch c.Hint {
	case classify.HintForceMaster:
		if s.InTx && s.TxNode >= 0 && s.TxNode != snap.Primary && writesData(c.Kind) {
			// The client's transaction is a read-only one on a replica: the hint does not
			// make it writable (the server would refuse the write in it).
			return Decision{Node: -1, Err: errReadOnlyTx}
		}
		return Decision{Node: snap.Primary, Reason: ReasonHint}
	case classify.HintForceNode:
		name := stmt[c.NodeName[0]:c.NodeName[1]]
		for i, n := range snap.Nodes {
			if n.Name == string(name) && !snap.IsRemoved(i) {
				if !snap.Routable(i) && !(s.InTx && s.TxNode == i) {
					// A node that takes no new work does not take it from a hint either (a
					// drain would never end): the client named this node, so it learns why
					// rather than getting another node's answer. Its own transaction still
					// open there is finished there.
					return Decision{Node: -1, Err: mysql.NewError(mysql.ErrUnknown, "HY000",
						"sluice: node '%s' named by /*FORCE_NODE*/ is %s: it takes no new statements", n.Name, snap.Unroutable(i))}
				}
				if i != snap.Primary && (primary || (s.InTx && s.TxNode == snap.Primary)) {
					return Decision{Node: -1, Err: mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
						"sluice: /*FORCE_NODE*/ cannot run a write or a statement of a transaction that wrote on replica '%s'", n.Name)}
				}
				return Decision{Node: i, Reason: ReasonHint}
			}
		}
		return Decision{Node: -1, Err: mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: /*FORCE_NODE*/ names no node called '%s'", name)}
	case classify.HintForceSlave:
		if primary || (s.InTx && s.TxNode == snap.Primary) {
			return Decision{Node: -1, Err: errHintWrite}
		}
		n := pickReplica(s, ep, snap, false)
		if n < 0 {
			return Decision{Node: -1, Err: errNoReplica}
		}
		return Decision{Node: n, Reason: ReasonHint}
	}

	// Inside a transaction a node holds, everything goes there until it ends. A transaction
	// on a replica is read-only: where a server would end it implicitly (a new transaction, a
	// change of autocommit), sluice ends it there (EndTx) and routes the statement as outside a
	// transaction; a write sent into it would only fail there (or, on a replica that let it
	// through, fork the data).
	if s.InTx && s.TxNode >= 0 {
		if s.TxNode == snap.Primary || (c.Kind != classify.Begin && c.Flags&classify.SetAutocommit == 0) {
			if s.TxNode != snap.Primary && primary && !replicaTxAllows(c) {
				// A write, or anything else that could change the node, in a read-only
				// transaction on a replica: refused as the primary refuses a write in its
				// own read-only transaction. The replica's read-only guard would not stop
				// all of it (ANALYZE TABLE, FLUSH, SET GLOBAL, SELECT … INTO OUTFILE…).
				return Decision{Node: -1, Err: errReadOnlyTx}
			}
			return Decision{Node: s.TxNode, Reason: ReasonInTransaction}
		}
		d := decideOutsideTx(c, s, ep, snap, primary, why)
		d.EndTx = true
		return d
	}
	return decideOutsideTx(c, s, ep, snap, primary, why)
}

// replicaTxAllows reports whether c may run in the read-only transaction a session holds on a
// replica although it needs the primary outside one: reads that need the session's own
// connection (session functions, locking reads, the primary's SHOWs), session statements,
// the transaction's own end and savepoints, SQL prepared statements whose text was judged so
// at PREPARE, and batches of those. Nothing that could change the node: writes, DDL,
// maintenance (ANALYZE/OPTIMIZE/REPAIR TABLE), FLUSH, RESET, replication and plugin control,
// SET GLOBAL, KILL, CALL, DO, HANDLER, SELECT … INTO OUTFILE, sequences, anything unknown;
// a read-only transaction does not stop most of those, and the replica's guard is only a
// second line.
func replicaTxAllows(c *classify.Result) bool {
	const changes = classify.IntoFile | classify.Sequence | classify.SetGlobal | classify.ReadWriteTx | classify.SetAutocommit
	if c.Flags&changes != 0 {
		return false
	}
	if c.Flags&classify.Multi != 0 {
		// SET SESSION TRANSACTION READ WRITE alone is session state for the transactions
		// after this one (the guard is restored right after it); in a batch, what follows a
		// COMMIT in it would run read-write.
		return c.Kinds&^replicaTxBatchKinds == 0 && c.Flags&classify.SetReadWrite == 0
	}
	switch c.Kind {
	case classify.Select, classify.Show, classify.Explain, classify.Set, classify.Use, classify.Commit,
		classify.Rollback, classify.Savepoint, classify.RollbackTo, classify.ReleaseSavepoint,
		classify.Execute, classify.Deallocate, classify.Help, classify.Get:
		return c.Flags&classify.Analyze == 0 || c.Kind == classify.Select
	case classify.Prepare:
		// SQL PREPARE: its text runs at EXECUTE, where the transaction is: judged now.
		inner := classify.Result{Kind: c.Inner, Flags: c.InnerFlags, Kinds: classify.KindSet(1) << c.Inner}
		return inner.Kind != classify.Prepare && replicaTxAllows(&inner)
	}
	return false
}

// replicaTxBatchKinds are the kinds a multi-statement batch may hold in a replica's read-only
// transaction.
const replicaTxBatchKinds = classify.KindSet(1<<classify.Select | 1<<classify.Show | 1<<classify.Explain |
	1<<classify.Set | 1<<classify.Use | 1<<classify.Commit | 1<<classify.Rollback)

// writesData reports whether a statement of kind k changes data (what a READ ONLY transaction
// refuses with 1792).
func writesData(k classify.Kind) bool {
	switch k {
	case classify.Insert, classify.Update, classify.Delete, classify.Replace, classify.LoadData, classify.DDL:
		return true
	}
	return false
}

// MayReadReplica reports whether Decide may send c to a replica as a read (ReasonRead or
// ReasonReadOnlyTx): a cheap superset, with no side effect, for the proxy to know before
// deciding whether it must find the position a consistency level needs.
func MayReadReplica(c *classify.Result, s *Session, ep *Settings, snap *topology.Snapshot) bool {
	if ep.Mode == ReadOnly || c.Hint != classify.HintNone || c.Flags&classify.Multi != 0 || s.Pins != 0 ||
		classify.ReadsDiagnostics(c) {
		// (The diagnostics statements go where the session's warnings are: no position.)
		return false
	}
	if s.InTx && s.TxNode >= 0 && (s.TxNode == snap.Primary || (c.Kind != classify.Begin && c.Flags&classify.SetAutocommit == 0)) {
		return false
	}
	if c.Kind == classify.Begin {
		return c.Flags&classify.ReadOnlyTx != 0
	}
	if primary, _ := needsPrimary(c); primary {
		return false
	}
	return (s.Autocommit && !s.TxPending) || ep.SplitTx
}

// decideOutsideTx is Decide for a statement of a session with no transaction open on a node.
func decideOutsideTx(c *classify.Result, s *Session, ep *Settings, snap *topology.Snapshot, primary bool, why Reason) Decision {
	if c.Flags&classify.Multi != 0 {
		// A batch runs whole on the primary, whatever its first statement is: START
		// TRANSACTION READ ONLY; ANALYZE TABLE t is not a read-only transaction for a
		// replica, and BEGIN; INSERT … is not a BEGIN that sluice may answer itself.
		return Decision{Node: snap.Primary, Reason: why}
	}
	switch c.Kind {
	case classify.Begin:
		switch {
		case c.Flags&classify.ReadOnlyTx != 0:
			if n := pickReplica(s, ep, snap, false); n >= 0 {
				return Decision{Node: n, Reason: ReasonReadOnlyTx}
			}
			return Decision{Node: snap.Primary, Reason: ReasonFallback}
		case ep.SplitTx:
			return Decision{Node: -1, Local: true, Reason: ReasonDeferredTx}
		}
		return Decision{Node: snap.Primary, Reason: ReasonTransactionStart}
	case classify.Commit, classify.Rollback:
		if s.TxPending {
			return Decision{Node: -1, Local: true, Reason: ReasonDeferredTx}
		}
		return Decision{Node: snap.Primary, Reason: ReasonWrite}
	case classify.Set, classify.Use:
		// Session state: run where the session runs, replayed on other nodes before use.
		if s.Pins != 0 {
			return Decision{Node: snap.Primary, Reason: ReasonPinned}
		}
		return Decision{Node: snap.Primary, Reason: ReasonSession}
	}
	diag := !primary && classify.ReadsDiagnostics(c)
	if diag && s.DiagNode >= 0 && snap.Routable(s.DiagNode) {
		// SHOW WARNINGS, @@warning_count…: where the session's warnings are, which is not
		// always where the previous statement ran (SELECT 1 keeps them where they were).
		return Decision{Node: s.DiagNode, Reason: ReasonPrevious}
	}
	if diag || c.Flags&classify.FoundRows != 0 {
		if s.LastNode >= 0 && snap.Up[s.LastNode] {
			return Decision{Node: s.LastNode, Reason: ReasonPrevious}
		}
		return Decision{Node: snap.Primary, Reason: ReasonPrevious}
	}
	if primary {
		return Decision{Node: snap.Primary, Reason: why}
	}
	if s.Pins != 0 {
		return Decision{Node: snap.Primary, Reason: ReasonPinned}
	}
	if c.Flags&classify.TxReadOnlyRead != 0 {
		// @@tx_read_only: a replica connection answers 1 (sluice's guard); the session's own
		// setting is the primary's (a hint may still name a replica, to see the guard).
		return Decision{Node: snap.Primary, Reason: ReasonSessionFunction}
	}
	// A read. Outside autocommit it belongs to a transaction: on the primary, unless
	// transaction splitting lets reads before the first write go to a replica.
	if (!s.Autocommit || s.TxPending) && !ep.SplitTx {
		return Decision{Node: snap.Primary, Reason: ReasonInTransaction}
	}
	if n := pickReplica(s, ep, snap, true); n >= 0 {
		return Decision{Node: n, Reason: ReasonRead}
	}
	return Decision{Node: snap.Primary, Reason: ReasonFallback}
}

// pickReplica chooses among the nodes with a read weight that are up (the primary too when
// withPrimary and its weight > 0; a FORCE_SLAVE hint wants a replica only).
func pickReplica(s *Session, ep *Settings, snap *topology.Snapshot, withPrimary bool) int {
	candidates, weights := s.cand[:0], s.wts[:0]
	for i, w := range ep.Weights {
		if i >= len(snap.Up) {
			break // a node added to the topology before the endpoint's weights (its weight: 0)
		}
		if ep.eligibility(snap, i, withPrimary, s.HasTarget, true) != Eligible {
			continue
		}
		candidates = append(candidates, i)
		weights = append(weights, w)
	}
	if s.HasTarget {
		// Replicas known to have what the read must see come first; without one, any (the
		// read then waits on the one picked, or goes to the primary).
		reached := 0
		for k, n := range candidates {
			if n == snap.Primary || (n < 64 && s.Reached&(1<<n) != 0) {
				candidates[reached], weights[reached] = n, weights[k]
				reached++
			}
		}
		if reached > 0 {
			candidates, weights = candidates[:reached], weights[:reached]
		}
	}
	if ep.NearestZone && ep.Zone != "" {
		// The usable nodes of this proxy's zone, moved to the front in order; when the zone
		// has none, the loop moved nothing and every candidate stays.
		near := 0
		for k, n := range candidates {
			if snap.Nodes[n].Zone == ep.Zone {
				candidates[near], weights[near] = n, weights[k]
				near++
			}
		}
		if near > 0 {
			candidates, weights = candidates[:near], weights[:near]
		}
	}
	s.cand, s.wts = candidates, weights
	return ep.Policy.Pick(snap, candidates, weights)
}

// decideReadOnly: every statement goes to the session's replica; writes are refused.
func decideReadOnly(c *classify.Result, s *Session, ep *Settings, snap *topology.Snapshot) Decision {
	if c.Hint == classify.HintForceMaster || readOnlyRefuses(c) {
		return Decision{Node: -1, Err: errReadOnly(ep.Name)}
	}
	if s.Bound < 0 {
		// The endpoint became read-only after this session connected as read-write: it has
		// no replica of its own, and the primary is not for read-only endpoints.
		return Decision{Node: -1, Err: mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
			"The sluice endpoint '%s' became read-only after this connection was made: reconnect", ep.Name)}
	}
	if s.Bound < len(snap.State) && snap.State[s.Bound].Faulty() && c.Kind != classify.Rollback && c.Kind != classify.Commit {
		// Errant or broken, and no other replica to move to (the session moves at its next
		// statement outside a transaction once there is one): what it holds is not the
		// primary's data. A transaction open there can still end.
		return Decision{Node: -1, Err: mysql.NewError(mysql.ErrUnknown, "HY000",
			"sluice: replica '%s' is out of rotation (%s) and the endpoint '%s' has no other replica", snap.Nodes[s.Bound].Name,
			topology.Problem(snap.State[s.Bound]), ep.Name)}
	}
	return Decision{Node: s.Bound, Reason: ReasonBound}
}

// readOnlyRefuses reports whether a read-only endpoint refuses c: anything that writes, or
// that sluice cannot prove is a read.
func readOnlyRefuses(c *classify.Result) bool {
	primary, _ := needsPrimary(c)
	switch c.Kind {
	case classify.Set, classify.Use, classify.Begin, classify.Commit, classify.Rollback, classify.Savepoint,
		classify.RollbackTo, classify.ReleaseSavepoint, classify.Execute, classify.Deallocate:
		primary = false
	case classify.Prepare:
		// SQL PREPARE: the text runs at EXECUTE, on this replica, so it is judged now as the
		// statement itself (a text that is not a literal, PREPARE … FROM @v, is Unknown).
		// Every name that can be executed was judged so.
		inner := classify.Result{Kind: c.Inner, Flags: c.InnerFlags, Kinds: classify.KindSet(1) << c.Inner}
		primary = readOnlyRefuses(&inner)
	case classify.Select:
		// Reads that need session functions are fine on the session's own replica; only
		// locking reads, sequences and SELECT ... INTO OUTFILE/DUMPFILE change something
		// (SELECT ... INTO @var only sets a session variable).
		primary = c.Flags&(classify.LockingRead|classify.IntoFile|classify.Sequence|classify.LockFunction) != 0
	case classify.Show:
		primary = false
	}
	// The replica connection stays read-only whatever the client sets (SET SESSION TRANSACTION
	// READ WRITE, tx_read_only = 0, START TRANSACTION READ WRITE), and nothing here changes the
	// replica for everyone (SET GLOBAL).
	if c.Flags&(classify.SetReadWrite|classify.ReadWriteTx|classify.SetGlobal|classify.IntoFile) != 0 {
		primary = true
	}
	// A batch is judged by every statement in it, not by the first: its kinds, and its flags
	// (collected over the batch) as for one SELECT.
	const batchChanges = classify.ExplainWrite | classify.LockingRead | classify.Sequence | classify.LockFunction
	if c.Flags&classify.Multi != 0 && (c.Kinds&^readOnlyBatchKinds != 0 || c.Flags&batchChanges != 0) {
		primary = true
	}
	return primary
}

// readOnlyBatchKinds are the kinds a multi-statement batch may hold on a read-only endpoint:
// reads (their flags, collected over the batch, are checked as for one statement) and session
// statements.
const readOnlyBatchKinds = classify.KindSet(1<<classify.Select | 1<<classify.Show | 1<<classify.Explain |
	1<<classify.Set | 1<<classify.Use | 1<<classify.Begin | 1<<classify.Commit | 1<<classify.Rollback)
