<?php
// mysqli scenarios.
declare(strict_types=1);

mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);

const MY_TYPES = [0 => 'DECIMAL', 1 => 'TINY', 2 => 'SHORT', 3 => 'LONG', 4 => 'FLOAT', 5 => 'DOUBLE', 6 => 'NULL',
    7 => 'TIMESTAMP', 8 => 'LONGLONG', 9 => 'INT24', 10 => 'DATE', 11 => 'TIME', 12 => 'DATETIME', 13 => 'YEAR',
    14 => 'NEWDATE', 15 => 'VARCHAR', 16 => 'BIT', 245 => 'JSON', 246 => 'NEWDECIMAL', 247 => 'ENUM', 248 => 'SET',
    249 => 'TINY_BLOB', 250 => 'MEDIUM_BLOB', 251 => 'LONG_BLOB', 252 => 'BLOB', 253 => 'VAR_STRING', 254 => 'STRING',
    255 => 'GEOMETRY'];
const MY_FLAGS = [1 => 'NOT_NULL', 2 => 'PRI_KEY', 4 => 'UNIQUE_KEY', 8 => 'MULTIPLE_KEY', 16 => 'BLOB', 32 => 'UNSIGNED',
    64 => 'ZEROFILL', 128 => 'BINARY', 256 => 'ENUM', 512 => 'AUTO_INCREMENT', 1024 => 'TIMESTAMP', 2048 => 'SET',
    4096 => 'NO_DEFAULT_VALUE', 8192 => 'ON_UPDATE_NOW', 16384 => 'PART_KEY', 32768 => 'NUM'];

// my_connect: a mysqli connection with read timeout; options: user, password, db, charset,
// timeout, local_infile (true: CB_WORK, or a directory), native (MYSQLI_OPT_INT_AND_FLOAT_NATIVE), persistent, flags.
function my_connect(array $o = []): mysqli
{
    $m = mysqli_init();
    $m->options(MYSQLI_OPT_CONNECT_TIMEOUT, READ_TIMEOUT);
    $m->options(MYSQLI_OPT_READ_TIMEOUT, $o['timeout'] ?? READ_TIMEOUT);
    if (!empty($o['local_infile'])) {
        // mysqli.allow_local_infile is off (run.sh); a directory enables LOAD DATA LOCAL below it.
        $m->options(MYSQLI_OPT_LOAD_DATA_LOCAL_DIR, $o['local_infile'] === true ? CB['work'] : $o['local_infile']);
    }
    if (!empty($o['native'])) {
        $m->options(MYSQLI_OPT_INT_AND_FLOAT_NATIVE, true);
    }
    if (isset($o['charset'])) {
        $m->options(MYSQLI_SET_CHARSET_NAME, $o['charset']);
    }
    $host = (!empty($o['persistent']) ? 'p:' : '') . CB['host'];
    $m->real_connect($host, $o['user'] ?? CB['user'], $o['password'] ?? CB['password'],
        array_key_exists('db', $o) ? $o['db'] : CB['db'], CB['port'], null, $o['flags'] ?? 0);
    if (!isset($o['charset'])) {
        $m->set_charset('utf8mb4');
    }
    return $m;
}

function my_field(object $f): string
{
    $flags = [];
    foreach (MY_FLAGS as $bit => $name) {
        if ($f->flags & $bit) {
            $flags[] = $name;
        }
    }
    return sprintf('col %s: type=%s(%d) charsetnr=%d length=%d decimals=%d flags=%d[%s] orgname=%s table=%s orgtable=%s db=%s def=%s',
        $f->name, MY_TYPES[$f->type] ?? '?', $f->type, $f->charsetnr, $f->length, $f->decimals, $f->flags,
        implode(',', $flags), $f->orgname, $f->table, $f->orgtable, $f->db, fv($f->def));
}

function my_row(array $names, array $row): void
{
    if (count($row) <= 5) {
        $parts = [];
        foreach ($row as $i => $v) {
            $parts[] = $names[$i] . '=' . fv($v);
        }
        out('  row: ' . implode(', ', $parts));
        return;
    }
    out('  row:');
    foreach ($row as $i => $v) {
        out('    ' . $names[$i] . ' = ' . fv($v));
    }
}

// my_result: a result set's metadata and rows.
function my_result(mysqli_result $r, bool $meta = true): void
{
    $fields = $r->fetch_fields();
    if ($meta) {
        foreach ($fields as $f) {
            out('  ' . my_field($f));
        }
    }
    $names = array_map(fn($f) => $f->name, $fields);
    $n = 0;
    while (($row = $r->fetch_row()) !== null && $row !== false) {
        my_row($names, $row);
        $n++;
    }
    out("  rows fetched=$n num_rows=" . $r->num_rows . ' field_count=' . $r->field_count);
    $r->free();
}

function my_ok(mysqli $m, string $what = 'ok'): void
{
    out(sprintf('  %s: affected_rows=%s insert_id=%s warning_count=%d info=%s field_count=%d', $what,
        fv($m->affected_rows), fv($m->insert_id), $m->warning_count, fv($m->info), $m->field_count));
}

function my_warnings(mysqli $m): void
{
    $w = $m->get_warnings();
    if ($w === false) {
        out('  get_warnings: none');
        return;
    }
    do {
        out(sprintf('  get_warnings: errno=%d sqlstate=%s message=%s', $w->errno, $w->sqlstate, $w->message));
    } while ($w->next());
}

// my_drop: DROP TABLE IF EXISTS, not printed (its warning count depends on an earlier run).
function my_drop(mysqli $m, string $table): void
{
    $m->query("DROP TABLE IF EXISTS $table");
}

// my_q: one statement through COM_QUERY; a result set is printed, otherwise the OK packet.
function my_q(mysqli $m, string $sql, bool $meta = true): void
{
    out('  > ' . sql_shown($sql));
    $r = $m->query($sql);
    if ($r instanceof mysqli_result) {
        my_result($r, $meta);
        out(sprintf('  after result: warning_count=%d info=%s', $m->warning_count, fv($m->info)));
    } else {
        my_ok($m);
    }
}

// my_multi: multi_query (or real_query for one statement) and every result, next_result loop.
function my_multi(mysqli $m, string $sql, bool $useResult = false, bool $real = false): void
{
    out('  > ' . sql_shown($sql));
    if ($real) {
        $m->real_query($sql);
    } else {
        $m->multi_query($sql);
    }
    $i = 0;
    while (true) {
        $r = $useResult ? $m->use_result() : $m->store_result();
        if ($r instanceof mysqli_result) {
            out("  result #$i: result set");
            my_result($r, $i === 0 || !$useResult);
        } else {
            my_ok($m, "result #$i");
        }
        $i++;
        $more = $m->more_results();
        if (!$more) {
            out('  more_results=false');
            break;
        }
        try {
            $m->next_result();
        } catch (mysqli_sql_exception $e) {
            out("  next_result #$i: " . fmt_exc($e));
            out('  more_results=' . fv($m->more_results()));
            break;
        }
    }
}

// my_stmt: prepare + execute through the binary protocol, every result (next_result loop).
function my_stmt(mysqli $m, string $sql, string $types = '', array $params = [], bool $meta = true): void
{
    out('  prepare> ' . sql_shown($sql) . ($types !== '' ? '  [' . $types . ': ' . implode(', ', array_map('fv', $params)) . ']' : ''));
    $st = $m->prepare($sql);
    out(sprintf('  prepared: param_count=%d field_count=%d', $st->param_count, $st->field_count));
    $meta0 = $st->result_metadata();
    if ($meta0 instanceof mysqli_result) {
        out('  result_metadata: ' . implode(', ', array_map(fn($f) => $f->name . ':' . (MY_TYPES[$f->type] ?? $f->type), $meta0->fetch_fields())));
        $meta0->free();
    }
    if ($types !== '') {
        $st->bind_param($types, ...$params);
    }
    $st->execute();
    my_stmt_results($m, $st, $meta);
    $st->close();
}

function my_stmt_results(mysqli $m, mysqli_stmt $st, bool $meta = true): void
{
    $i = 0;
    while (true) {
        $r = $st->get_result();
        if ($r instanceof mysqli_result) {
            out("  stmt result #$i: result set");
            my_result($r, $meta);
        } else {
            out(sprintf('  stmt result #%d: affected_rows=%s insert_id=%s conn.warning_count=%d conn.info=%s field_count=%d',
                $i, fv($st->affected_rows), fv($st->insert_id), $m->warning_count, fv($m->info), $st->field_count));
        }
        $i++;
        if (!$st->more_results()) {
            out('  stmt more_results=false');
            break;
        }
        try {
            $st->next_result();
        } catch (mysqli_sql_exception $e) {
            out("  stmt next_result #$i: " . fmt_exc($e));
            break;
        }
    }
}

// ---------------------------------------------------------------- scenarios

function mysqli_scenarios(): void
{
    scenario('mysqli.types.text', function () {
        $m = my_connect();
        my_q($m, 'SELECT ' . TYPES_COLUMNS . ' FROM t_types ORDER BY id');
        my_q($m, "SELECT 1 AS i, -1.5 AS dec_lit, 1e0 AS dbl, 'x' AS s, NULL AS n, CAST(18446744073709551615 AS UNSIGNED) AS u64,
            _binary'ab' AS bin, JSON_OBJECT('a', 1, 'b', JSON_ARRAY(1, 'x')) AS jo, CAST('2024-01-02' AS DATE) AS dd,
            CAST('12:00:01.25' AS TIME(2)) AS tt, ST_AsText(g) AS wkt, JSON_EXTRACT(j, '$.a') AS je, HEX(b64) AS hb
            FROM t_types ORDER BY id");
    });

    scenario('mysqli.types.text-native', function () {
        $m = my_connect(['native' => true]);
        my_q($m, 'SELECT ' . TYPES_COLUMNS . ' FROM t_types ORDER BY id', false);
    });

    scenario('mysqli.types.binary', function () {
        $m = my_connect();
        my_stmt($m, 'SELECT ' . TYPES_COLUMNS . ' FROM t_types WHERE id >= ? ORDER BY id', 'i', [1]);
        step('bind_result', function () use ($m) {
            $st = $m->prepare('SELECT id, tiu, biu, de, fl, db, b64, d, t6, dt6, ts, y, vc, bl, e, st, j FROM t_types ORDER BY id');
            $st->execute();
            $row = array_fill(0, 17, null);
            $refs = [];
            foreach ($row as $k => &$v) {
                $refs[$k] = &$v;
            }
            unset($v);
            $st->bind_result(...$refs);
            $names = ['id', 'tiu', 'biu', 'de', 'fl', 'db', 'b64', 'd', 't6', 'dt6', 'ts', 'y', 'vc', 'bl', 'e', 'st', 'j'];
            while ($st->fetch()) {
                my_row($names, array_map(fn($x) => $x, $refs));
            }
            $st->close();
        });
        step('parameter types', function () use ($m) {
            $i = -9223372036854775807 - 1;
            $d = 2.5;
            $s = "é😀'\\";
            $n = null;
            $u = '18446744073709551615';
            my_stmt($m, 'SELECT ? AS i, ? AS d, ? AS s, ? AS n, ? AS u, ? + 0 AS plus', 'idsssi', [$i, $d, $s, $n, $u, 41]);
        });
        step('send_long_data', function () use ($m) {
            $st = $m->prepare('SELECT ? AS b, LENGTH(?) AS l');
            $null = null;
            $st->bind_param('bb', $null, $null);
            $st->send_long_data(0, "\x00\x01chunk1");
            $st->send_long_data(0, 'chunk2');
            $st->send_long_data(1, str_repeat('z', 70000));
            $st->execute();
            my_stmt_results($m, $st);
            $st->close();
        });
    });

    if (RW) {
        scenario('mysqli.dml', 'mysqli_dml');
        scenario('mysqli.dml.binary', 'mysqli_dml_binary');
        scenario('mysqli.transactions', 'mysqli_tx');
        scenario('mysqli.multi', 'mysqli_multi_rw');
        scenario('mysqli.procedures', 'mysqli_procs');
        foreach (['text', 'binary'] as $proto) {
            foreach (['p_cursor()', 'p_cursor_loop(@n, @joined)'] as $call) {
                scenario("mysqli.procedures.cursor.$proto " . strtok($call, '('), function () use ($proto, $call) {
                    $m = my_connect(['timeout' => CURSOR_PROC_TIMEOUT]);
                    if ($proto === 'text') {
                        my_multi($m, "CALL $call", false, true);
                    } else {
                        my_stmt($m, "CALL $call");
                    }
                    my_q($m, 'SELECT @n, @joined');
                });
            }
        }
    } else {
        scenario('mysqli.transactions.read-only', 'mysqli_tx_ro');
        scenario('mysqli.multi', 'mysqli_multi_ro');
    }
    scenario('mysqli.variables', 'mysqli_vars');
    scenario('mysqli.charsets', 'mysqli_charsets');
    scenario('mysqli.errors', 'mysqli_errors');
    scenario('mysqli.big', 'mysqli_big');
    if (RW) {
        scenario('mysqli.load-data-local', 'mysqli_load');
    }
    scenario('mysqli.reconnect-change-user', 'mysqli_reconnect');
    scenario('mysqli.stmt-cursor', 'mysqli_stmt_cursor');
}

function mysqli_dml(): void
{
    $m = my_connect();
    my_drop($m, ' t_dml_mysqli');
    my_q($m, 'CREATE TABLE t_dml_mysqli (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(10) NOT NULL UNIQUE, n INT NOT NULL DEFAULT 0, tiny TINYINT)');
    step('multi-row insert', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k, n) VALUES ('a', 1), ('b', 2), ('c', 3)"));
    step('single insert', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k, n) VALUES ('d', 4)"));
    step('update', fn() => my_q($m, "UPDATE t_dml_mysqli SET n = n + 10 WHERE k IN ('a', 'b', 'zz')"));
    step('update matching nothing changed', fn() => my_q($m, "UPDATE t_dml_mysqli SET n = n WHERE k = 'a'"));
    step('delete', fn() => my_q($m, "DELETE FROM t_dml_mysqli WHERE k = 'd'"));
    step('on duplicate key update: update', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k, n) VALUES ('a', 100) ON DUPLICATE KEY UPDATE n = VALUES(n)"));
    step('on duplicate key update: unchanged', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k, n) VALUES ('a', 100) ON DUPLICATE KEY UPDATE n = VALUES(n)"));
    step('on duplicate key update: insert', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k, n) VALUES ('e', 5) ON DUPLICATE KEY UPDATE n = VALUES(n)"));
    step('on duplicate key multi-row', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k, n) VALUES ('a', 7), ('f', 6), ('b', 12) ON DUPLICATE KEY UPDATE n = VALUES(n)"));
    step('replace', fn() => my_q($m, "REPLACE INTO t_dml_mysqli (k, n) VALUES ('c', 33), ('g', 7)"));
    step('insert select', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k, n) SELECT CONCAT(k, '2'), n FROM t_dml_mysqli WHERE k IN ('a', 'b')"));
    step('last_insert_id', function () use ($m) {
        my_q($m, 'SELECT LAST_INSERT_ID() AS lii');
        my_q($m, 'UPDATE t_dml_mysqli SET n = LAST_INSERT_ID(n + 1000) WHERE k = \'a\'');
        my_q($m, 'SELECT LAST_INSERT_ID() AS lii');
        my_q($m, 'SELECT LAST_INSERT_ID(77) AS set77');
        my_q($m, 'SELECT LAST_INSERT_ID() AS lii');
    });
    step('explicit id', fn() => my_q($m, "INSERT INTO t_dml_mysqli (id, k) VALUES (500, 'h')"));
    step('next auto id', fn() => my_q($m, "INSERT INTO t_dml_mysqli (k) VALUES ('i')"));
    step('insert ignore duplicate (warning)', function () use ($m) {
        my_q($m, "INSERT IGNORE INTO t_dml_mysqli (k, n) VALUES ('a', 1), ('j', 2)");
        my_warnings($m);
        my_q($m, 'SHOW WARNINGS');
    });
    step('truncation warnings', function () use ($m) {
        my_q($m, "INSERT IGNORE INTO t_dml_mysqli (k, n, tiny) VALUES ('kkkkkkkkkkkkkk', 'x', 300)");
        my_q($m, 'SHOW WARNINGS');
        my_q($m, 'SHOW COUNT(*) WARNINGS');
    });
    step('select warnings', function () use ($m) {
        my_q($m, "SELECT 1/0 AS z, CAST('12abc' AS INT) AS c");
        my_warnings($m);
        my_q($m, 'SHOW WARNINGS');
    });
    step('update info with warnings', function () use ($m) {
        my_q($m, 'UPDATE IGNORE t_dml_mysqli SET tiny = n * 100 WHERE k IN (\'a\', \'b\', \'e\')');
        my_q($m, 'SHOW WARNINGS');
    });
    step('final', fn() => my_q($m, 'SELECT id, k, n, tiny FROM t_dml_mysqli ORDER BY id'));
}

function mysqli_dml_binary(): void
{
    $m = my_connect();
    my_drop($m, ' t_dml_mysqli_b');
    my_q($m, 'CREATE TABLE t_dml_mysqli_b (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(10) NOT NULL UNIQUE, n INT NOT NULL DEFAULT 0)');
    step('multi-row insert', fn() => my_stmt($m, 'INSERT INTO t_dml_mysqli_b (k, n) VALUES (?, ?), (?, ?), (?, ?)', 'sisisi', ['a', 1, 'b', 2, 'c', 3]));
    step('update', fn() => my_stmt($m, 'UPDATE t_dml_mysqli_b SET n = n + ? WHERE k IN (?, ?)', 'iss', [10, 'a', 'b']));
    step('delete', fn() => my_stmt($m, 'DELETE FROM t_dml_mysqli_b WHERE k = ?', 's', ['c']));
    step('odku', fn() => my_stmt($m, 'INSERT INTO t_dml_mysqli_b (k, n) VALUES (?, ?) ON DUPLICATE KEY UPDATE n = VALUES(n)', 'si', ['a', 99]));
    step('re-execute one statement', function () use ($m) {
        $st = $m->prepare('INSERT INTO t_dml_mysqli_b (k, n) VALUES (?, ?)');
        foreach ([['x', 1], ['y', 2], ['x', 3]] as [$k, $n]) {
            try {
                $st->bind_param('si', $k, $n);
                $st->execute();
                out(sprintf('  execute %s: affected_rows=%s insert_id=%s conn.warning_count=%d', $k, fv($st->affected_rows), fv($st->insert_id), $m->warning_count));
            } catch (mysqli_sql_exception $e) {
                out("  execute $k: " . fmt_exc($e) . ' stmt.errno=' . $st->errno . ' stmt.sqlstate=' . $st->sqlstate);
            }
        }
        $st->close();
    });
    step('insert ignore warning', function () use ($m) {
        my_stmt($m, 'INSERT IGNORE INTO t_dml_mysqli_b (k, n) VALUES (?, ?)', 'si', ['a', 1]);
        my_q($m, 'SHOW WARNINGS');
    });
    step('final', fn() => my_stmt($m, 'SELECT id, k, n FROM t_dml_mysqli_b ORDER BY id'));
}

function mysqli_tx(): void
{
    $m = my_connect();
    my_drop($m, ' t_tx_mysqli');
    my_q($m, 'CREATE TABLE t_tx_mysqli (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB');
    $state = fn(string $l) => my_q($m, "SELECT '$l' AS at, @@autocommit AS ac, @@in_transaction AS in_tx, (SELECT COUNT(*) FROM t_tx_mysqli) AS n, (SELECT GROUP_CONCAT(id ORDER BY id) FROM t_tx_mysqli) AS ids", false);
    step('api begin/rollback', function () use ($m, $state) {
        out('  begin_transaction: ' . fv($m->begin_transaction()));
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (1, 'a')");
        $state('in tx');
        out('  rollback: ' . fv($m->rollback()));
        $state('after rollback');
    });
    step('api begin/commit', function () use ($m, $state) {
        $m->begin_transaction();
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (2, 'b')");
        out('  commit: ' . fv($m->commit()));
        $state('after commit');
    });
    step('sql begin/rollback, start transaction/commit', function () use ($m, $state) {
        my_q($m, 'BEGIN');
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (3, 'c')");
        my_q($m, 'ROLLBACK');
        $state('after sql rollback');
        my_q($m, 'START TRANSACTION');
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (4, 'd')");
        my_q($m, 'COMMIT');
        $state('after sql commit');
    });
    step('autocommit off (api)', function () use ($m, $state) {
        out('  autocommit(false): ' . fv($m->autocommit(false)));
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (5, 'e')");
        $state('autocommit off, uncommitted');
        $other = my_connect();
        my_q($other, 'SELECT COUNT(*) AS other_sees FROM t_tx_mysqli');
        $other->close();
        $m->rollback();
        $state('after rollback');
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (6, 'f')");
        $m->commit();
        out('  autocommit(true): ' . fv($m->autocommit(true)));
        $state('autocommit back on');
    });
    step('autocommit off (sql)', function () use ($m, $state) {
        my_q($m, 'SET autocommit = 0');
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (7, 'g')");
        my_q($m, 'ROLLBACK');
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (8, 'h')");
        my_q($m, 'COMMIT');
        my_q($m, 'SET autocommit = 1');
        $state('sql autocommit back on');
    });
    step('savepoints', function () use ($m, $state) {
        $m->begin_transaction();
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (9, 'i')");
        out('  savepoint(sp1): ' . fv($m->savepoint('sp1')));
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (10, 'j')");
        my_q($m, 'ROLLBACK TO SAVEPOINT sp1');
        out('  release_savepoint(sp1): ' . fv($m->release_savepoint('sp1')));
        $m->commit();
        $state('after savepoint');
    });
    step('read only transaction', function () use ($m, $state) {
        $m->begin_transaction(MYSQLI_TRANS_START_READ_ONLY);
        $state('read only tx');
        my_q($m, "INSERT INTO t_tx_mysqli VALUES (11, 'k')");
    });
    step('after read only', function () use ($m, $state) {
        $m->rollback();
        $state('after ro rollback');
    });
    step('uncommitted work discarded at close', function () use ($state) {
        $c = my_connect();
        $c->autocommit(false);
        my_q($c, "INSERT INTO t_tx_mysqli VALUES (12, 'l')");
        $c->close();
    });
    step('final', fn() => $state('final'));
}

function mysqli_tx_ro(): void
{
    $m = my_connect();
    $state = fn(string $l) => my_q($m, "SELECT '$l' AS at, @@autocommit AS ac, @@in_transaction AS in_tx, (SELECT COUNT(*) FROM t_types) AS n", false);
    step('read only transaction (api)', function () use ($m, $state) {
        $m->begin_transaction(MYSQLI_TRANS_START_READ_ONLY);
        $state('in ro tx');
        $m->commit();
        $state('after commit');
    });
    step('sql start transaction read only', function () use ($m, $state) {
        my_q($m, 'START TRANSACTION READ ONLY');
        $state('in ro tx');
        my_q($m, 'ROLLBACK');
        $state('after rollback');
    });
}

function mysqli_multi_rw(): void
{
    $m = my_connect();
    my_drop($m, ' t_multi_mysqli');
    my_q($m, 'CREATE TABLE t_multi_mysqli (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))');
    step('mixed batch', fn() => my_multi($m, "SELECT 1 AS a, 'x' AS b; INSERT INTO t_multi_mysqli (v) VALUES ('x'); SET @m = 5; SELECT @m AS m, COUNT(*) AS c FROM t_multi_mysqli; UPDATE t_multi_mysqli SET v = 'z' WHERE v = 'x'; DELETE FROM t_multi_mysqli WHERE v = 'nope'; SELECT id, v FROM t_multi_mysqli ORDER BY id"));
    step('batch with multi-row insert', fn() => my_multi($m, "INSERT INTO t_multi_mysqli (v) VALUES ('p'), ('q'); SELECT id, v FROM t_multi_mysqli ORDER BY id"));
    step('after', fn() => my_q($m, 'SELECT COUNT(*) AS n FROM t_multi_mysqli'));
    step('error in the middle', fn() => my_multi($m, 'SELECT 1 AS one; SELECT * FROM no_such_table; SELECT 3 AS three'));
    step('after error', fn() => my_q($m, "SELECT 'after' AS s"));
    step('use_result', fn() => my_multi($m, 'SELECT id, v FROM t_multi_mysqli ORDER BY id; SELECT 2 AS two; DO 1', true));
    step('error first', fn() => my_multi($m, 'SELEC 1; SELECT 2'));
    step('after error first', fn() => my_q($m, "SELECT 'after' AS s"));
    step('real_query + use_result', function () use ($m) {
        $m->real_query('SELECT id, v FROM t_multi_mysqli ORDER BY id');
        $r = $m->use_result();
        my_result($r);
    });
}

function mysqli_multi_ro(): void
{
    $m = my_connect();
    // DO is refused on a read-only endpoint, alone or in a batch: no DO here.
    step('read batch', fn() => my_multi($m, "SELECT 1 AS a, 'x' AS b; SELECT id, vc FROM t_types ORDER BY id; SET @r = 7; SELECT @r AS r; SELECT s FROM t ORDER BY s"));
    step('error in the middle', fn() => my_multi($m, 'SELECT 1 AS one; SELECT * FROM no_such_table; SELECT 3 AS three'));
    step('after error', fn() => my_q($m, "SELECT 'after' AS s"));
    step('use_result', fn() => my_multi($m, 'SELECT id, u FROM t_cs ORDER BY id; SELECT 2 AS two', true));
    step('real_query + use_result', function () use ($m) {
        $m->real_query('SELECT s FROM t ORDER BY s');
        my_result($m->use_result());
    });
}

function mysqli_procs(): void
{
    $m = my_connect();
    step('text: several result sets', fn() => my_multi($m, 'CALL p_multi(21)', false, true));
    step('text: after', fn() => my_q($m, 'SELECT 1 AS after_call'));
    step('text: OUT/INOUT via user variables', function () use ($m) {
        my_q($m, 'SET @o = NULL, @io = 5');
        my_multi($m, 'CALL p_out(3, @o, @io)', false, true);
        my_q($m, 'SELECT @o AS o, @io AS io');
    });
    step('text: call in a multi-statement batch', fn() => my_multi($m, 'SET @io = 1; CALL p_out(2, @o, @io); SELECT @o AS o, @io AS io'));
    step('binary: several result sets', fn() => my_stmt($m, 'CALL p_multi(?)', 'i', [4]));
    step('binary: OUT/INOUT via user variables', function () use ($m) {
        my_q($m, 'SET @o = NULL, @io = 6');
        my_stmt($m, 'CALL p_out(?, @o, @io)', 'i', [4]);
        my_q($m, 'SELECT @o AS o, @io AS io');
    });
    step('binary: OUT/INOUT as placeholders', function () use ($m) {
        $b = null;
        $c = 7;
        my_stmt($m, 'CALL p_out(?, ?, ?)', 'isi', [5, $b, $c]);
    });
    step('after', fn() => my_q($m, 'SELECT 1 AS after_calls'));
}

function mysqli_vars(): void
{
    $m = my_connect();
    step('user variables', function () use ($m) {
        my_q($m, "SET @i = 42, @s = 'str é', @d = 1.50, @f = 1.5e0, @n = NULL, @b = _binary x'00ff', @big = 18446744073709551615");
        my_q($m, 'SELECT @i, @s, @d, @f, @n, @b, @big, @never_set');
        my_stmt($m, 'SELECT @i, @s, @d, @f, @n, @b, @big, @never_set');
        my_stmt($m, 'SET @p = ?', 's', ['from binary']);
        my_q($m, 'SELECT @p AS p');
        my_q($m, 'SET @cnt := (SELECT COUNT(*) FROM t_types)');
        my_q($m, 'SELECT @cnt AS cnt, @cnt + 1 AS cnt1');
    });
    step('sql_mode', function () use ($m) {
        my_q($m, "SET SESSION sql_mode = 'ANSI_QUOTES,PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION'");
        my_q($m, 'SELECT @@SESSION.sql_mode AS m');
        my_q($m, "SELECT 'a' || 'b' AS piped");
        my_q($m, 'SELECT "vc" FROM t_types WHERE id = 3');
        my_q($m, 'SET SESSION sql_mode = DEFAULT');
        my_q($m, 'SELECT @@SESSION.sql_mode = @@GLOBAL.sql_mode AS is_default');
    });
    step('time_zone', function () use ($m) {
        my_q($m, "SET SESSION time_zone = '+05:30'");
        my_q($m, 'SELECT @@session.time_zone AS tz, FROM_UNIXTIME(86400 * 365) AS fu, UNIX_TIMESTAMP(\'2024-01-01 00:00:00\') AS ut');
        my_q($m, 'SELECT id, ts FROM t_types ORDER BY id');
        my_stmt($m, 'SELECT id, ts FROM t_types ORDER BY id');
        my_q($m, "SET time_zone = '+00:00'");
        my_q($m, 'SELECT id, ts, UNIX_TIMESTAMP(ts) AS u FROM t_types ORDER BY id');
    });
    step('other session variables', function () use ($m) {
        my_q($m, 'SET SESSION group_concat_max_len = 5, SESSION tx_isolation = \'READ-COMMITTED\', @@session.sql_select_limit = 2');
        my_q($m, 'SELECT @@group_concat_max_len AS gcml, @@tx_isolation AS iso, @@sql_select_limit AS lim');
        my_q($m, 'SELECT GROUP_CONCAT(s ORDER BY s) AS g FROM t');
        my_q($m, 'SELECT id FROM t_types ORDER BY id');
        my_q($m, 'SET @@session.sql_select_limit = DEFAULT');
        my_q($m, 'SELECT id FROM t_types ORDER BY id');
    });
    step('new connection has fresh state', function () {
        $c = my_connect();
        my_q($c, 'SELECT @i, @@session.time_zone = @@global.time_zone AS tz_default, @@group_concat_max_len AS gcml');
    });
}

function mysqli_charsets(): void
{
    $sel = 'SELECT id, u, l, HEX(u) AS hu, HEX(l) AS hl FROM t_cs ORDER BY id';
    $lit = "SELECT 'héllo 😀' AS lit, CHAR_LENGTH('héllo 😀') AS cl, LENGTH('héllo 😀') AS bl, @@character_set_client AS csc, @@character_set_connection AS csn, @@character_set_results AS csr, @@collation_connection AS coll";
    $cs = function (mysqli $m) {
        $c = $m->get_charset();
        out(sprintf('  character_set_name=%s get_charset: charset=%s collation=%s number=%d min=%d max=%d', $m->character_set_name(), $c->charset, $c->collation, $c->number, $c->min_length, $c->max_length));
    };
    step('utf8mb4', function () use ($sel, $lit, $cs) {
        $m = my_connect();
        $cs($m);
        my_q($m, $sel);
        my_q($m, $lit);
        my_stmt($m, 'SELECT ? AS p, HEX(?) AS h', 'ss', ['ñ😀', 'ñ😀']);
        out('  real_escape_string: ' . fv($m->real_escape_string("é'😀\"\\\x00\n")));
    });
    step('latin1 at connect', function () use ($sel, $lit, $cs) {
        $m = my_connect(['charset' => 'latin1']);
        $cs($m);
        my_q($m, $sel);
        my_q($m, $lit);
    });
    step('set_charset latin1 then SET NAMES', function () use ($sel, $cs) {
        $m = my_connect();
        $m->set_charset('latin1');
        $cs($m);
        my_q($m, $sel);
        my_q($m, 'SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci');
        $cs($m);
        my_q($m, 'SELECT @@collation_connection AS coll, u FROM t_cs WHERE id = 2');
        my_q($m, 'SET NAMES binary');
        my_q($m, 'SELECT u, l FROM t_cs WHERE id = 1');
        my_q($m, "SET NAMES 'latin1'");
        my_stmt($m, 'SELECT u, l FROM t_cs ORDER BY id');
    });
    if (RW) {
        step('write through latin1 and utf8mb4', function () use ($sel) {
            $m = my_connect(['charset' => 'latin1']);
            my_drop($m, ' t_cs_mysqli');
            my_q($m, 'CREATE TABLE t_cs_mysqli (id INT PRIMARY KEY, u VARCHAR(20) CHARACTER SET utf8mb4, l VARCHAR(20) CHARACTER SET latin1)');
            my_q($m, "INSERT INTO t_cs_mysqli VALUES (1, '\xe9t\xe9', '\xe9t\xe9')");
            $m->close();
            $m = my_connect();
            my_stmt($m, 'INSERT INTO t_cs_mysqli VALUES (?, ?, ?)', 'iss', [2, '😀 ü', 'ü']);
            my_q($m, "INSERT INTO t_cs_mysqli VALUES (3, '€', '€')");
            step('emoji into latin1 column', fn() => my_q($m, "INSERT INTO t_cs_mysqli VALUES (4, '€', '😀')"));
            my_q($m, 'SELECT id, u, l, HEX(u), HEX(l) FROM t_cs_mysqli ORDER BY id');
        });
    }
}

function mysqli_errors(): void
{
    $m = my_connect();
    $after = fn() => my_q($m, 'SELECT 1 AS still_alive', false);
    // On a read-only endpoint sluice refuses a statement it cannot classify (1290: it may be a
    // write); a syntax error inside a SELECT reaches the replica like any read.
    step('syntax error', fn() => my_q($m, RW ? 'SELEC 1' : 'SELECT 1 FROM WHERE'));
    $after();
    step('unknown table', fn() => my_q($m, 'SELECT * FROM no_such_table'));
    $after();
    step('unknown column', fn() => my_q($m, 'SELECT no_col FROM t_types'));
    $after();
    step('syntax error inside a SELECT', fn() => my_q($m, 'SELECT * FROM WHERE id = 1'));
    $after();
    step('prepare error', fn() => my_stmt($m, 'SELECT * FROM no_such_table WHERE id = ?', 'i', [1]));
    $after();
    step('execute error', fn() => my_stmt($m, 'SELECT CAST(? AS INT) + (SELECT s FROM t)', 'i', [1]));
    $after();
    if (RW) {
        my_drop($m, ' t_err_mysqli');
        my_q($m, 'CREATE TABLE t_err_mysqli (id INT PRIMARY KEY)');
        my_q($m, 'INSERT INTO t_err_mysqli VALUES (1)');
        step('signal', fn() => my_q($m, "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom é', MYSQL_ERRNO = 1644"));
        $after();
        step('duplicate key', fn() => my_q($m, 'INSERT INTO t_err_mysqli VALUES (1)'));
        $after();
        step('duplicate key (binary)', fn() => my_stmt($m, 'INSERT INTO t_err_mysqli VALUES (?)', 'i', [1]));
        $after();
        step('not null', fn() => my_q($m, 'INSERT INTO t_err_mysqli VALUES (NULL)'));
        $after();
    }
    step('reporting off: errno, sqlstate, error, error_list', function () use ($m) {
        mysqli_report(MYSQLI_REPORT_OFF);
        try {
            $r = $m->query('SELECT * FROM no_such_table');
            out('  query returned ' . fv($r) . ' errno=' . $m->errno . ' sqlstate=' . $m->sqlstate . ' error=' . $m->error . ' error_list=' . json_encode($m->error_list));
            $st = $m->prepare('SELEC ?');
            out('  prepare returned ' . fv($st) . ' errno=' . $m->errno . ' sqlstate=' . $m->sqlstate . ' error=' . $m->error);
            $r = $m->query('SELECT 1');
            out('  then: ' . fv($r instanceof mysqli_result ? $r->fetch_row() : $r) . ' errno=' . $m->errno . ' sqlstate=' . $m->sqlstate);
        } finally {
            mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
        }
    });
    step('connect error: wrong password', function () {
        my_connect(['password' => 'wrong']);
    });
    step('connect error: unknown database', function () {
        my_connect(['db' => 'no_such_db']);
    });
}

function mysqli_big(): void
{
    $blob = big_blob();
    $text = big_text();
    out('  client data: blob ' . strlen($blob) . ' sha1=' . sha1($blob) . ', text ' . strlen($text) . ' sha1=' . sha1($text));
    $m = my_connect();
    if (RW) {
        step('text protocol insert', function () use ($m, $blob, $text) {
            my_q($m, 'DELETE FROM t_big');
            my_q($m, "INSERT INTO t_big VALUES (1, '" . $m->real_escape_string($blob) . "', '" . $m->real_escape_string($text) . "')");
        });
        step('binary insert, send_long_data', function () use ($m, $blob, $text) {
            $st = $m->prepare('INSERT INTO t_big VALUES (2, ?, ?)');
            $null = null;
            $st->bind_param('bb', $null, $null);
            foreach (str_split($blob, 4 * 1024 * 1024) as $chunk) {
                $st->send_long_data(0, $chunk);
            }
            foreach (str_split($text, 5 * 1024 * 1024) as $chunk) {
                $st->send_long_data(1, $chunk);
            }
            $st->execute();
            out('  affected_rows=' . $st->affected_rows);
            $st->close();
        });
        step('binary insert, one execute packet', fn() => my_stmt($m, 'INSERT INTO t_big VALUES (3, ?, ?)', 'ss', [$blob, $text]));
    }
    step('server side lengths', fn() => my_q($m, 'SELECT id, LENGTH(b) AS lb, SHA1(b) AS hb, LENGTH(tx) AS lt, SHA1(tx) AS ht FROM t_big ORDER BY id'));
    step('text read', fn() => my_q($m, 'SELECT id, b, tx FROM t_big ORDER BY id'));
    step('binary read', fn() => my_stmt($m, 'SELECT id, b, tx FROM t_big WHERE id > ? ORDER BY id', 'i', [0]));
    step('REPEAT text', fn() => my_q($m, 'SELECT REPEAT(\'x\', 17 * 1024 * 1024) AS r, 1 AS one'));
    step('REPEAT binary', fn() => my_stmt($m, 'SELECT REPEAT(?, 17 * 1024 * 1024 + 1) AS r, 1 AS one', 's', ['y']));
    step('after', fn() => my_q($m, 'SELECT 1 AS still_alive'));
}

function mysqli_load(): void
{
    $file = CB['work'] . '/php-mysqli-load.csv';
    file_put_contents($file, "1,alpha,1.5\n2,\"b\xc3\xa9ta, quoted\",\\N\n3,gamma,3\n");
    $bad = CB['work'] . '/php-mysqli-load-bad.csv';
    file_put_contents($bad, "4,delta,x4\n1,dup,1\n5,epsilon\n");
    $load = fn(string $f, string $mod = '') => "LOAD DATA LOCAL INFILE '$f' $mod INTO TABLE t_load_mysqli CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n'";
    $m = my_connect(['local_infile' => true]);
    my_drop($m, ' t_load_mysqli');
    my_q($m, 'CREATE TABLE t_load_mysqli (id INT PRIMARY KEY, s VARCHAR(50), f DOUBLE)');
    step('load', fn() => my_q($m, $load($file)));
    step('load ignore with bad rows', function () use ($m, $load, $bad) {
        my_q($m, $load($bad, 'IGNORE'));
        my_q($m, 'SHOW WARNINGS');
    });
    step('load replace', fn() => my_q($m, $load($file, 'REPLACE')));
    step('missing file', fn() => my_q($m, $load(CB['work'] . '/php-no-such-file.csv')));
    step('after missing file', fn() => my_q($m, 'SELECT COUNT(*) AS n FROM t_load_mysqli'));
    step('after', fn() => my_q($m, 'SELECT id, s, f FROM t_load_mysqli ORDER BY id'));
    step('local infile disabled', function () use ($load, $file) {
        $c = my_connect();
        my_q($c, $load($file, 'REPLACE'));
        my_q($c, 'SELECT 1 AS still_alive');
    });
    step('file outside the allowed directory', function () use ($load, $file) {
        is_dir(CB['work'] . '/php-elsewhere') || mkdir(CB['work'] . '/php-elsewhere');
        $c = my_connect(['local_infile' => CB['work'] . '/php-elsewhere']);
        my_q($c, $load($file, 'REPLACE'));
        my_q($c, 'SELECT 1 AS still_alive');
    });
}

function mysqli_reconnect(): void
{
    $m = my_connect();
    step('session state', function () use ($m) {
        my_q($m, "SET @v = 'kept?'");
        if (RW) {
            my_q($m, 'CREATE TEMPORARY TABLE tmp_php (x INT)');
            my_q($m, 'INSERT INTO tmp_php VALUES (1)');
            my_q($m, 'SELECT x FROM tmp_php');
        }
        my_q($m, 'SELECT @v AS v, CURRENT_USER() AS cu, DATABASE() AS db');
    });
    step('change_user to CB_USER2', function () use ($m) {
        out('  change_user: ' . fv($m->change_user(CB['user2'], CB['password2'], CB['db'])));
        // Not compared: sluice opens new node connections at a change of user, so the node's
        // CONNECTION_ID() changes where the server's own stays.
        my_q($m, 'SELECT @v AS v, CURRENT_USER() AS cu, DATABASE() AS db, @@character_set_client AS csc');
        if (RW) {
            my_q($m, 'SELECT x FROM tmp_php');
        }
        my_q($m, 'SELECT COUNT(*) AS n FROM t_types');
        my_q($m, 'SELECT COUNT(*) FROM mysql.user');
    });
    step('change_user back, no database', function () use ($m) {
        out('  change_user: ' . fv($m->change_user(CB['user'], CB['password'], null)));
        my_q($m, 'SELECT @v AS v, CURRENT_USER() AS cu, DATABASE() AS db');
        $m->select_db(CB['db']);
        my_q($m, 'SELECT DATABASE() AS db, COUNT(*) AS n FROM t_types');
    });
    step('change_user wrong password', function () use ($m) {
        try {
            $m->change_user(CB['user2'], 'wrong', CB['db']);
        } catch (Throwable $e) {
            out('  change_user: ' . fmt_exc($e));
        }
        my_q($m, 'SELECT CURRENT_USER() AS cu, DATABASE() AS db, @@character_set_client AS csc, @@collation_connection AS coll, @v AS v');
    });
    step('close and connect again', function () use ($m) {
        $m->close();
        $c = my_connect();
        my_q($c, 'SELECT @v AS v, CURRENT_USER() AS cu, DATABASE() AS db');
        if (RW) {
            my_q($c, 'SELECT x FROM tmp_php');
        }
    });
    step('persistent connection reused (mysqli resets it)', function () {
        $p = my_connect(['persistent' => true]);
        my_q($p, "SET @pv = 'persisted?'");
        if (RW) {
            my_q($p, 'CREATE TEMPORARY TABLE tmp_php_p (x INT)');
        }
        $id1 = $p->query('SELECT CONNECTION_ID()')->fetch_row()[0];
        $p->close();
        $p = my_connect(['persistent' => true]);
        $id2 = $p->query('SELECT CONNECTION_ID()')->fetch_row()[0];
        // Not compared: sluice opens new node connections at a change of user, so the node's
        // CONNECTION_ID() changes where the server's own stays.
        my_q($p, 'SELECT @pv AS pv, CURRENT_USER() AS cu, DATABASE() AS db');
        if (RW) {
            my_q($p, 'SELECT x FROM tmp_php_p');
        }
        $p->close();
    });
    step('ping', function () {
        $c = my_connect();
        out('  ping: ' . fv($c->ping()));
    });
}

function mysqli_stmt_cursor(): void
{
    $m = my_connect();
    $fetchAll = function (mysqli_stmt $st, array $names) {
        $vals = array_fill(0, count($names), null);
        $refs = [];
        foreach ($vals as $k => &$v) {
            $refs[$k] = &$v;
        }
        unset($v);
        $st->bind_result(...$refs);
        $n = 0;
        while ($st->fetch()) {
            my_row($names, array_map(fn($x) => $x, $refs));
            $n++;
        }
        out("  fetched $n");
    };
    step('prefetch rows 2 (mysqlnd: not implemented)', function () use ($m) {
        $st = $m->prepare('SELECT 1');
        $st->attr_set(MYSQLI_STMT_ATTR_PREFETCH_ROWS, 2);
    });
    step('read only cursor', function () use ($m, $fetchAll) {
        $st = $m->prepare('SELECT id, vc, de, dt6, j FROM t_types ORDER BY id');
        $st->attr_set(MYSQLI_STMT_ATTR_CURSOR_TYPE, MYSQLI_CURSOR_TYPE_READ_ONLY);
        $st->attr_set(MYSQLI_STMT_ATTR_PREFETCH_ROWS, 1);
        out('  attr cursor_type=' . $st->attr_get(MYSQLI_STMT_ATTR_CURSOR_TYPE) . ' prefetch=' . $st->attr_get(MYSQLI_STMT_ATTR_PREFETCH_ROWS));
        $st->execute();
        $fetchAll($st, ['id', 'vc', 'de', 'dt6', 'j']);
        $st->close();
    });
    step('two cursors interleaved, a query in between', function () use ($m) {
        $a = $m->prepare('SELECT id FROM t_types WHERE id <= ? ORDER BY id');
        $b = $m->prepare('SELECT s FROM t ORDER BY s');
        foreach ([$a, $b] as $st) {
            $st->attr_set(MYSQLI_STMT_ATTR_CURSOR_TYPE, MYSQLI_CURSOR_TYPE_READ_ONLY);
            $st->attr_set(MYSQLI_STMT_ATTR_PREFETCH_ROWS, 1);
        }
        $lim = 4;
        $a->bind_param('i', $lim);
        $a->execute();
        $b->execute();
        $x = $y = null;
        $a->bind_result($x);
        $b->bind_result($y);
        for ($i = 0; $i < 4; $i++) {
            $ra = $a->fetch();
            $rb = $b->fetch();
            out('  a: ' . fv($ra) . ' ' . fv($x) . '  b: ' . fv($rb) . ' ' . fv($y));
            if ($i === 1) {
                my_q($m, 'SELECT 42 AS between_fetches');
            }
        }
        $a->close();
        $b->close();
    });
    step('cursor re-executed', function () use ($m, $fetchAll) {
        $st = $m->prepare('SELECT s FROM t WHERE s > ? ORDER BY s');
        $st->attr_set(MYSQLI_STMT_ATTR_CURSOR_TYPE, MYSQLI_CURSOR_TYPE_READ_ONLY);
        $st->attr_set(MYSQLI_STMT_ATTR_PREFETCH_ROWS, 1);
        foreach (['a', 'f', 'z'] as $from) {
            $st->bind_param('s', $from);
            $st->execute();
            $fetchAll($st, ['s']);
            $st->free_result();
        }
        $st->close();
    });
    step('cursor with get_result', function () use ($m) {
        $st = $m->prepare('SELECT id, vc FROM t_types ORDER BY id');
        $st->attr_set(MYSQLI_STMT_ATTR_CURSOR_TYPE, MYSQLI_CURSOR_TYPE_READ_ONLY);
        $st->execute();
        my_stmt_results($m, $st, false);
        $st->close();
    });
    step('after', fn() => my_q($m, 'SELECT 1 AS still_alive'));
}
