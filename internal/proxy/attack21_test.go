package proxy_test

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// TestAttackSluiceAnswersAndHints tries to change a writable replica through the statement
// paths sluice reads itself: hints after leading comments, SLUICE SHOW … and
// /*PROXY_INTERNAL*/ commands, SELECT CONNECTION_ID() (which sluice answers), KILL, each with
// more hidden behind it (batches, comments the server ends elsewhere, executable comments).
// After each attack no replica changed and no replica wrote a file. Before the hint's comment
// ended at its first */, /*FORCE_NODE='a*/ SET SESSION TRANSACTION READ WRITE; INSERT … -- '*/
// SELECT 1 was a SELECT to sluice: the read-only endpoint ran it on its replica, which took
// the INSERT.
func TestAttackSluiceAnswersAndHints(t *testing.T) {
	ctx := context.Background()
	s := startSluice(t, nil)
	attackSetup(t, ctx)
	var attacks []attack
	for _, ep := range []string{"rw", "ro"} {
		for _, q := range []string{
			"/*FORCE_NODE='a*/ SET SESSION TRANSACTION READ WRITE; INSERT INTO atk.t VALUES (NULL) -- '*/ SELECT 1",
			`/*FORCE_NODE="a*/ SET @@session.tx_read_only = 0; INSERT INTO atk.tm VALUES (NULL) -- "*/ SELECT 1`,
			"/* app */ /*FORCE_NODE='replica1*/ SET SESSION TRANSACTION READ WRITE; INSERT INTO atk.ta VALUES (NULL) # '*/ SELECT 1",
			"/* app */ /*FORCE_SLAVE*/ INSERT INTO atk.t VALUES (NULL)",
			"-- x\n/*FORCE_SLAVE*/ SET SESSION TRANSACTION READ WRITE; INSERT INTO atk.t VALUES (NULL)",
			"# x\n/*FORCE_SLAVE*/ SELECT 1 INTO OUTFILE '/tmp/sluice_atk_21'",
			"/*FORCE_SLAVE*/ /*!50000 INSERT INTO atk.t VALUES (NULL) */",
			"/*M!100000 SET SESSION TRANSACTION READ WRITE; */ /*FORCE_SLAVE*/ INSERT INTO atk.t VALUES (NULL)",
			"/* '*/ /*FORCE_SLAVE*/ SET SESSION TRANSACTION READ WRITE; INSERT INTO atk.t VALUES (NULL) -- '",
			"SLUICE SHOW NODES; INSERT INTO atk.t VALUES (NULL)",
			"/*PROXY_INTERNAL*/ SHOW NODES; INSERT INTO atk.t VALUES (NULL)",
			"/*PROXY_INTERNAL*/ INSERT INTO atk.t VALUES (NULL)",
			"SLUICE /**/ : BEGIN NOT ATOMIC INSERT INTO atk.t VALUES (NULL); END",
			"SELECT CONNECTION_ID(); SET SESSION TRANSACTION READ WRITE; INSERT INTO atk.t VALUES (NULL)",
			"SELECT CONNECTION_ID() INTO OUTFILE '/tmp/sluice_atk_22'",
			"SELECT CONNECTION_ID() /*!50000 INTO OUTFILE '/tmp/sluice_atk_23' */",
			"SELECT CONNECTION_ID() FROM atk.t FOR UPDATE",
			"SELECT CONNECTION_ID() AS x FROM DUAL WHERE NEXTVAL(atk.s) > 0",
			"SELECT CONNECTION_ID(), NEXTVAL(atk.s)",
			"KILL /*!50000 QUERY */ 1; INSERT INTO atk.t VALUES (NULL)",
		} {
			attacks = append(attacks, attack{ep: ep, stmts: []string{q}})
		}
	}
	before := attackState(t, ctx)
	// A latin1 client: 0xA0 (no-break space) is whitespace to the server, part of a word to
	// the lexer. Before DependsSpace, both endpoints ran these on a replica, which wrote the
	// file.
	for _, ep := range []string{"rw", "ro"} {
		addr := s.rw
		if ep == "ro" {
			addr = s.ro
		}
		for _, q := range []string{
			"SELECT 1 INTO\xa0OUTFILE '/tmp/sluice_atk_24'",
			"SELECT 1\xa0INTO OUTFILE '/tmp/sluice_atk_24'",
			"/* app */ /*FORCE_SLAVE*/ SELECT 1 INTO\xa0OUTFILE '/tmp/sluice_atk_24'",
		} {
			os.Remove("/tmp/sluice_atk_24")
			cn := conn(t, open(t, dsn(addr, "app", "app", "test", "charset=latin1")))
			_, err := cn.ExecContext(ctx, q)
			node, role, _ := lastRoute(t, cn)
			if _, serr := os.Stat("/tmp/sluice_atk_24"); serr == nil && (role == "replica" || ep == "ro") {
				t.Errorf("%s latin1 %q: replica %s wrote the file (err %v)", ep, q, node, err)
			}
			t.Logf("%s latin1 %q: %s/%s %v", ep, q, node, role, err)
			cn.Close()
		}
	}
	os.Remove("/tmp/sluice_atk_24")
	for _, a := range attacks {
		addr := s.rw
		if a.ep == "ro" {
			addr = s.ro
		}
		db := open(t, dsn(addr, "app", "app", "test", "multiStatements=true"))
		cn := conn(t, db)
		var log []string
		for _, q := range a.stmts {
			_, err := cn.ExecContext(ctx, q)
			log = append(log, fmt.Sprintf("%q: %v", q, err))
		}
		cn.Close()
		db.Close()
		before = attackAftermath(t, ctx, a.ep, a.stmts, 21, 23, before, log)
	}
}
