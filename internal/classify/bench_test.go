package classify

import (
	"strings"
	"testing"
)

// longSelect is an ORM-style query of about 1 KiB: many qualified, backquoted columns,
// joins, placeholders, a string, and ORDER BY/LIMIT.
var longSelect = func() string {
	var b strings.Builder
	b.WriteString("/* app=shop,controller=orders,action=index */ SELECT ")
	cols := []string{"id", "user_id", "status", "total_cents", "currency", "created_at", "updated_at",
		"shipping_address_id", "billing_address_id", "coupon_code", "notes", "paid_at"}
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`orders`.`" + c + "` AS `orders_" + c + "`")
	}
	b.WriteString(", `users`.`email` AS `users_email`, `users`.`name` AS `users_name`" +
		" FROM `orders` INNER JOIN `users` ON `users`.`id` = `orders`.`user_id`" +
		" LEFT OUTER JOIN `addresses` ON `addresses`.`id` = `orders`.`shipping_address_id`" +
		" WHERE `orders`.`status` IN (?, ?, ?) AND `orders`.`created_at` BETWEEN ? AND ?" +
		" AND `users`.`email` LIKE 'customer%@example.com' AND `orders`.`total_cents` > 1000" +
		" ORDER BY `orders`.`created_at` DESC, `orders`.`id` DESC LIMIT 50 OFFSET 100")
	return b.String()
}()

var benchStatements = []struct {
	name string
	stmt string
	kind Kind
}{
	{"point_select", "SELECT c FROM sbtest1 WHERE id=?", Select},
	{"select_comment_between_order", "/* sysbench range */ SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", Select},
	{"update", "UPDATE sbtest1 SET k=k+1 WHERE id=?", Update},
	{"insert_4_columns", "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", Insert},
	{"long_select_1KiB", longSelect, Select},
	{"select_for_update", "SELECT c FROM sbtest1 WHERE id=? LIMIT 1 FOR UPDATE", Select},
	{"begin", "BEGIN", Begin},
	{"set_names", "SET NAMES utf8mb4", Set},
	{"jdbc_init", "/* mysql-connector-java-8.0.28 */SELECT  @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client AS character_set_client, @@max_allowed_packet AS max_allowed_packet, @@sql_mode AS sql_mode", Select},
	{"hint_force_node", "/*FORCE_NODE='replica-2'*/ SELECT c FROM sbtest1 WHERE id=?", Select},
}

func BenchmarkClassify(b *testing.B) {
	for _, bs := range benchStatements {
		stmt := []byte(bs.stmt)
		if r := Classify(stmt); r.Kind != bs.kind {
			b.Fatalf("%s: kind %v, want %v", bs.name, r.Kind, bs.kind)
		}
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stmt)))
			for b.Loop() {
				Classify(stmt)
			}
		})
	}
}

func BenchmarkIsProxyInternal(b *testing.B) {
	stmt := []byte("SELECT c FROM sbtest1 WHERE id=?")
	b.ReportAllocs()
	for b.Loop() {
		IsProxyInternal(stmt)
	}
}

// BenchmarkClassifyTable classifies every statement of the main test table once per
// iteration: a mix weighted toward the traps rather than toward real traffic.
func BenchmarkClassifyTable(b *testing.B) {
	stmts := make([][]byte, len(kindCases))
	for i, tc := range kindCases {
		stmts[i] = []byte(tc.in)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range stmts {
			Classify(s)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(stmts)), "ns/stmt")
}

// The proxy's questions after a statement ran: each allocates nothing.

func BenchmarkLeavesSessionState(b *testing.B) {
	r := Classify([]byte("SELECT * FROM t LIMIT 1 OFFSET 2; UPDATE t SET a = 1 WHERE id = 2"))
	b.ReportAllocs()
	for b.Loop() {
		LeavesSessionState(&r)
	}
}

func BenchmarkFirstWordIs(b *testing.B) {
	stmt := []byte("/* app=shop */ CREATE TEMPORARY TABLE tmp_orders (id BIGINT PRIMARY KEY)")
	b.ReportAllocs()
	for b.Loop() {
		FirstWordIs(stmt, "CREATE")
	}
}

func BenchmarkReleasesAllLocks(b *testing.B) {
	stmt := []byte("SELECT RELEASE_LOCK('orders'), RELEASE_ALL_LOCKS()")
	b.ReportAllocs()
	b.SetBytes(int64(len(stmt)))
	for b.Loop() {
		ReleasesAllLocks(stmt)
	}
}

func BenchmarkParseKill(b *testing.B) {
	stmt := []byte("/* admin */ KILL QUERY 4711;")
	b.ReportAllocs()
	for b.Loop() {
		ParseKill(stmt)
	}
}
