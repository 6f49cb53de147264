<?php
// PDO_MySQL scenarios, each with emulated prepares (text protocol) and server-side prepares
// (binary protocol, PDO::ATTR_EMULATE_PREPARES false).
declare(strict_types=1);

// pdo_connect: options: emu, charset, timeout, multi, local_infile, persistent, user, password, db, errmode, buffered.
function pdo_connect(array $o = []): PDO
{
    // mysqlnd's read timeout for PDO (it has no per-connection option for it).
    ini_set('mysqlnd.net_read_timeout', (string) ($o['timeout'] ?? READ_TIMEOUT));
    $db = array_key_exists('db', $o) ? $o['db'] : CB['db'];
    $dsn = 'mysql:host=' . CB['host'] . ';port=' . CB['port'] . ($db !== null ? ';dbname=' . $db : '')
        . ';charset=' . ($o['charset'] ?? 'utf8mb4');
    $opts = [
        PDO::ATTR_ERRMODE => $o['errmode'] ?? PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_EMULATE_PREPARES => $o['emu'] ?? true,
        PDO::ATTR_TIMEOUT => READ_TIMEOUT,
        PDO::MYSQL_ATTR_MULTI_STATEMENTS => $o['multi'] ?? true,
        PDO::MYSQL_ATTR_LOCAL_INFILE => $o['local_infile'] ?? false,
        PDO::MYSQL_ATTR_USE_BUFFERED_QUERY => $o['buffered'] ?? true,
    ];
    if (!empty($o['persistent'])) {
        $opts[PDO::ATTR_PERSISTENT] = true;
    }
    return new PDO($dsn, $o['user'] ?? CB['user'], $o['password'] ?? CB['password'], $opts);
}

function pdo_meta(PDOStatement $st, int $i): string
{
    $m = $st->getColumnMeta($i);
    if ($m === false) {
        return "col $i: getColumnMeta=false";
    }
    $name = $m['name'] ?? '?';
    unset($m['name']);
    ksort($m);
    return "col $name: " . json_encode($m, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES);
}

// pdo_rowsets: every rowset of an executed statement (nextRowset loop).
function pdo_rowsets(PDOStatement $st, bool $meta = true): void
{
    $i = 0;
    do {
        $cc = $st->columnCount();
        out(sprintf('  rowset #%d: columnCount=%d rowCount=%d', $i, $cc, $st->rowCount()));
        if ($cc > 0) {
            $names = [];
            for ($c = 0; $c < $cc; $c++) {
                if ($meta) {
                    out('  ' . pdo_meta($st, $c));
                }
                $names[] = $st->getColumnMeta($c)['name'] ?? "#$c";
            }
            $n = 0;
            while (($row = $st->fetch(PDO::FETCH_NUM)) !== false) {
                my_row($names, $row);
                $n++;
            }
            out("  rows fetched=$n");
        }
        $i++;
        try {
            $more = $st->nextRowset();
        } catch (PDOException $e) {
            out("  nextRowset #$i: " . fmt_exc($e));
            break;
        }
    } while ($more);
    out('  no more rowsets');
}

// pdo_q: PDO::query (emulated: COM_QUERY; otherwise prepare + execute).
function pdo_q(PDO $p, string $sql, bool $meta = true): void
{
    out('  query> ' . sql_shown($sql));
    $st = $p->query($sql);
    if ($st === false) {
        out('  query returned false errorCode=' . fv($p->errorCode()) . ' errorInfo=' . fv($p->errorInfo()));
        return;
    }
    pdo_rowsets($st, $meta);
    $st->closeCursor();
}

// pdo_x: PDO::exec (always COM_QUERY), its affected rows and lastInsertId.
function pdo_x(PDO $p, string $sql): void
{
    out('  exec> ' . sql_shown($sql));
    $n = $p->exec($sql);
    out('  exec returned ' . fv($n) . ' lastInsertId=' . fv($p->lastInsertId()));
}

// pdo_p: prepare + execute with parameters (bindValue with explicit types when given).
function pdo_p(PDO $p, string $sql, array $params = [], bool $meta = true): void
{
    out('  prepare> ' . sql_shown($sql) . ($params ? '  [' . implode(', ', array_map(fn($x) => is_array($x) ? fv($x[0]) . ':' . $x[1] : fv($x), $params)) . ']' : ''));
    $st = $p->prepare($sql);
    $i = 0;
    foreach ($params as $k => $v) {
        $key = is_string($k) ? $k : ++$i;
        if (is_array($v)) {
            $st->bindValue($key, $v[0], $v[1]);
        } else {
            $st->bindValue($key, $v);
        }
    }
    out('  execute: ' . fv($st->execute()) . ' lastInsertId=' . fv($p->lastInsertId()));
    pdo_rowsets($st, $meta);
    $st->closeCursor();
}

function pdo_scenarios(): void
{
    foreach (['emu' => true, 'srv' => false] as $tag => $emu) {
        scenario("pdo.$tag.types", function () use ($emu) {
            $p = pdo_connect(['emu' => $emu]);
            pdo_q($p, 'SELECT ' . TYPES_COLUMNS . ' FROM t_types ORDER BY id');
            pdo_p($p, 'SELECT ' . TYPES_COLUMNS . ' FROM t_types WHERE id >= ? ORDER BY id', [1], false);
            pdo_q($p, "SELECT 1 AS i, -1.5 AS dec_lit, 1e0 AS dbl, 'x' AS s, NULL AS n, CAST(18446744073709551615 AS UNSIGNED) AS u64,
                _binary'ab' AS bin, JSON_OBJECT('a', 1, 'b', JSON_ARRAY(1, 'x')) AS jo, ST_AsText(g) AS wkt FROM t_types ORDER BY id");
            step('parameter types', fn() => pdo_p($p, 'SELECT ? AS i, ? AS s, ? AS n, ? AS b, ? AS lob, ? AS f, ? + 1 AS plus', [
                [-9223372036854775807 - 1, PDO::PARAM_INT], ["é😀'\\", PDO::PARAM_STR], [null, PDO::PARAM_NULL],
                [true, PDO::PARAM_BOOL], ["\x00\xff", PDO::PARAM_LOB], 2.5, '41']));
            step('named parameters', fn() => pdo_p($p, 'SELECT id, vc FROM t_types WHERE id IN (:a, :b) ORDER BY id', [':a' => 1, ':b' => 3]));
            step('stringify fetches', function () use ($p) {
                $p->setAttribute(PDO::ATTR_STRINGIFY_FETCHES, true);
                pdo_q($p, 'SELECT id, bi, biu, de, fl, db, b64, y FROM t_types ORDER BY id', false);
                $p->setAttribute(PDO::ATTR_STRINGIFY_FETCHES, false);
            });
            step('json decode', function () use ($p) {
                foreach ($p->query('SELECT id, j FROM t_types ORDER BY id')->fetchAll(PDO::FETCH_NUM) as [$id, $j]) {
                    out("  $id: " . ($j === null ? 'NULL' : json_encode(json_decode($j, true), JSON_UNESCAPED_UNICODE | JSON_BIGINT_AS_STRING)));
                }
            });
        });
        if (RW) {
            scenario("pdo.$tag.dml", fn() => pdo_dml($emu, $tag));
            scenario("pdo.$tag.transactions", fn() => pdo_tx($emu, $tag));
            scenario("pdo.$tag.procedures", fn() => pdo_procs($emu));
            foreach (['p_cursor()', 'p_cursor_loop(@n, @joined)'] as $call) {
                scenario("pdo.$tag.procedures.cursor " . strtok($call, '('), function () use ($emu, $call) {
                    $p = pdo_connect(['emu' => $emu, 'timeout' => CURSOR_PROC_TIMEOUT]);
                    pdo_q($p, "CALL $call");
                    pdo_q($p, 'SELECT @n, @joined');
                });
            }
        }
        scenario("pdo.$tag.multi-statements", fn() => pdo_multi($emu, $tag));
        scenario("pdo.$tag.variables", fn() => pdo_vars($emu));
        scenario("pdo.$tag.charsets", fn() => pdo_charsets($emu, $tag));
        scenario("pdo.$tag.errors", fn() => pdo_errors($emu, $tag));
        scenario("pdo.$tag.big", fn() => pdo_big($emu, $tag));
        if (RW) {
            scenario("pdo.$tag.load-data-local", fn() => pdo_load($emu, $tag));
        }
        scenario("pdo.$tag.reconnect", fn() => pdo_reconnect($emu));
    }
}

function pdo_dml(bool $emu, string $tag): void
{
    $p = pdo_connect(['emu' => $emu]);
    $t = "t_dml_pdo_$tag";
    $p->exec("DROP TABLE IF EXISTS $t");
    pdo_x($p, "CREATE TABLE $t (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(10) NOT NULL UNIQUE, n INT NOT NULL DEFAULT 0, tiny TINYINT)");
    step('exec multi-row insert', fn() => pdo_x($p, "INSERT INTO $t (k, n) VALUES ('a', 1), ('b', 2), ('c', 3)"));
    step('prepared multi-row insert', fn() => pdo_p($p, "INSERT INTO $t (k, n) VALUES (?, ?), (?, ?)", ['d', 4, 'e', 5]));
    step('exec update', fn() => pdo_x($p, "UPDATE $t SET n = n + 10 WHERE k IN ('a', 'b', 'zz')"));
    step('prepared update', fn() => pdo_p($p, "UPDATE $t SET n = n + ? WHERE k IN (?, ?)", [1, 'a', 'c']));
    step('prepared delete', fn() => pdo_p($p, "DELETE FROM $t WHERE k = ?", ['e']));
    step('odku update/unchanged/insert', function () use ($p, $t) {
        foreach ([['a', 100], ['a', 100], ['f', 6]] as [$k, $n]) {
            pdo_p($p, "INSERT INTO $t (k, n) VALUES (?, ?) ON DUPLICATE KEY UPDATE n = VALUES(n)", [$k, $n]);
        }
    });
    step('last_insert_id', function () use ($p, $t) {
        pdo_x($p, "UPDATE $t SET n = LAST_INSERT_ID(n + 1000) WHERE k = 'a'");
        pdo_q($p, 'SELECT LAST_INSERT_ID() AS lii');
        pdo_x($p, "INSERT INTO $t (id, k) VALUES (500, 'h')");
        pdo_x($p, "INSERT INTO $t (k) VALUES ('i')");
    });
    step('insert ignore warnings', function () use ($p, $t) {
        pdo_x($p, "INSERT IGNORE INTO $t (k, n, tiny) VALUES ('a', 1, 1), ('kkkkkkkkkkkkkk', 2, 300)");
        pdo_q($p, 'SHOW WARNINGS');
        pdo_p($p, "INSERT IGNORE INTO $t (k, n) VALUES (?, ?)", ['a', 2]);
        pdo_q($p, 'SHOW WARNINGS');
        pdo_q($p, 'SELECT @@warning_count AS wc');
    });
    step('final', fn() => pdo_q($p, "SELECT id, k, n, tiny FROM $t ORDER BY id"));
}

function pdo_tx(bool $emu, string $tag): void
{
    $p = pdo_connect(['emu' => $emu]);
    $t = "t_tx_pdo_$tag";
    $p->exec("DROP TABLE IF EXISTS $t");
    pdo_x($p, "CREATE TABLE $t (id INT PRIMARY KEY) ENGINE=InnoDB");
    $state = function (string $l) use ($p, $t) {
        $r = $p->query("SELECT @@autocommit, @@in_transaction, COUNT(*), GROUP_CONCAT(id ORDER BY id) FROM $t")->fetch(PDO::FETCH_NUM);
        out("  [$l] inTransaction=" . fv($p->inTransaction()) . ' ATTR_AUTOCOMMIT=' . fv($p->getAttribute(PDO::ATTR_AUTOCOMMIT)) . ' server: ' . implode(' ', array_map('fv', $r)));
    };
    step('api rollback', function () use ($p, $t, $state) {
        out('  beginTransaction: ' . fv($p->beginTransaction()));
        pdo_x($p, "INSERT INTO $t VALUES (1)");
        $state('in tx');
        out('  rollBack: ' . fv($p->rollBack()));
        $state('after rollBack');
    });
    step('api commit', function () use ($p, $t, $state) {
        $p->beginTransaction();
        pdo_p($p, "INSERT INTO $t VALUES (?)", [2]);
        out('  commit: ' . fv($p->commit()));
        $state('after commit');
    });
    step('sql transaction', function () use ($p, $t, $state) {
        pdo_x($p, 'START TRANSACTION');
        pdo_x($p, "INSERT INTO $t VALUES (3)");
        $state('sql tx');
        pdo_x($p, 'ROLLBACK');
        pdo_x($p, 'BEGIN');
        pdo_x($p, "INSERT INTO $t VALUES (4)");
        pdo_x($p, 'COMMIT');
        $state('after sql commit');
    });
    step('ATTR_AUTOCOMMIT off', function () use ($p, $t, $state) {
        $p->setAttribute(PDO::ATTR_AUTOCOMMIT, false);
        pdo_x($p, "INSERT INTO $t VALUES (5)");
        $state('autocommit off');
        pdo_x($p, 'ROLLBACK');
        pdo_x($p, "INSERT INTO $t VALUES (6)");
        pdo_x($p, 'COMMIT');
        $p->setAttribute(PDO::ATTR_AUTOCOMMIT, true);
        $state('autocommit on');
    });
    step('commit without transaction', fn() => out('  commit: ' . fv($p->commit())));
    step('nested beginTransaction', function () use ($p, $state) {
        $p->beginTransaction();
        try {
            $p->beginTransaction();
        } finally {
            $p->rollBack();
            $state('after');
        }
    });
}

function pdo_procs(bool $emu): void
{
    $p = pdo_connect(['emu' => $emu]);
    step('several result sets', fn() => pdo_q($p, 'CALL p_multi(21)'));
    step('several result sets, prepared', fn() => pdo_p($p, 'CALL p_multi(?)', [4]));
    step('OUT/INOUT via user variables', function () use ($p) {
        pdo_x($p, 'SET @o = NULL, @io = 5');
        pdo_p($p, 'CALL p_out(?, @o, @io)', [3]);
        pdo_q($p, 'SELECT @o AS o, @io AS io');
    });
    step('OUT/INOUT as placeholders', function () use ($p) {
        $st = $p->prepare('CALL p_out(?, ?, ?)');
        $a = 5;
        $b = '';
        $c = 7;
        $st->bindParam(1, $a, PDO::PARAM_INT);
        $st->bindParam(2, $b, PDO::PARAM_STR | PDO::PARAM_INPUT_OUTPUT, 20);
        $st->bindParam(3, $c, PDO::PARAM_INT | PDO::PARAM_INPUT_OUTPUT);
        $st->execute();
        pdo_rowsets($st);
        out('  after: b=' . fv($b) . ' c=' . fv($c));
    });
    step('after', fn() => pdo_q($p, 'SELECT 1 AS after_calls'));
}

function pdo_multi(bool $emu, string $tag): void
{
    $p = pdo_connect(['emu' => $emu]);
    if (RW) {
        $t = "t_multi_pdo_$tag";
        $p->exec("DROP TABLE IF EXISTS $t");
        pdo_x($p, "CREATE TABLE $t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))");
        step('query: mixed batch', fn() => pdo_q($p, "SELECT 1 AS a; INSERT INTO $t (v) VALUES ('x'), ('y'); SET @m = 5; SELECT @m AS m, COUNT(*) AS c FROM $t; UPDATE $t SET v = 'z' WHERE v = 'x'; SELECT id, v FROM $t ORDER BY id"));
        step('after', fn() => pdo_q($p, "SELECT COUNT(*) AS n FROM $t"));
        step('exec: batch', fn() => pdo_x($p, "INSERT INTO $t (v) VALUES ('e1'); INSERT INTO $t (v) VALUES ('e2'), ('e3')"));
        step('after exec batch', fn() => pdo_q($p, "SELECT COUNT(*) AS n FROM $t"));
    } else {
        // DO is refused on a read-only endpoint, alone or in a batch: no DO here.
        step('query: read batch', fn() => pdo_q($p, "SELECT 1 AS a; SELECT id, vc FROM t_types ORDER BY id; SET @m = 5; SELECT @m AS m; SELECT s FROM t ORDER BY s"));
    }
    step('error in the middle', fn() => pdo_q($p, 'SELECT 1 AS one; SELECT * FROM no_such_table; SELECT 3 AS three'));
    step('after error', fn() => pdo_q($p, "SELECT 'after' AS s"));
    step('MULTI_STATEMENTS off', function () use ($emu) {
        $c = pdo_connect(['emu' => $emu, 'multi' => false]);
        try {
            pdo_q($c, 'SELECT 1 AS a; SELECT 2 AS b');
        } catch (PDOException $e) {
            out('  ' . fmt_exc($e));
        }
        pdo_q($c, "SELECT 'after' AS s");
    });
    step('unbuffered query, second query while open', function () use ($emu) {
        $c = pdo_connect(['emu' => $emu, 'buffered' => false]);
        $st = $c->query('SELECT id FROM t_types ORDER BY id');
        out('  first row: ' . fv($st->fetch(PDO::FETCH_NUM)));
        try {
            $c->query('SELECT 2');
        } catch (PDOException $e) {
            out('  ' . fmt_exc($e));
        }
        out('  rest: ' . fv($st->fetchAll(PDO::FETCH_NUM)));
        $st->closeCursor();
        pdo_q($c, "SELECT 'after' AS s");
    });
}

function pdo_vars(bool $emu): void
{
    $p = pdo_connect(['emu' => $emu]);
    step('user variables', function () use ($p) {
        pdo_x($p, "SET @i = 42, @s = 'str é', @d = 1.50, @f = 1.5e0, @n = NULL, @b = _binary x'00ff', @big = 18446744073709551615");
        pdo_q($p, 'SELECT @i, @s, @d, @f, @n, @b, @big, @never_set');
        pdo_p($p, 'SET @p = ?', ['bound']);
        pdo_q($p, 'SELECT @p AS p');
    });
    step('session variables', function () use ($p) {
        pdo_x($p, "SET SESSION sql_mode = 'ANSI_QUOTES', time_zone = '-03:00', SESSION tx_isolation = 'SERIALIZABLE'");
        pdo_q($p, 'SELECT @@SESSION.sql_mode AS m, @@session.time_zone AS tz, @@tx_isolation AS iso, FROM_UNIXTIME(0) AS epoch');
        pdo_q($p, 'SELECT "id", ts FROM t_types ORDER BY id');
    });
    step('init command', function () {
        $c = new PDO('mysql:host=' . CB['host'] . ';port=' . CB['port'] . ';dbname=' . CB['db'] . ';charset=utf8mb4', CB['user'], CB['password'],
            [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::MYSQL_ATTR_INIT_COMMAND => "SET @init = 'from init', time_zone = '+01:00'"]);
        pdo_q($c, 'SELECT @init AS init, @@time_zone AS tz, @i AS i');
    });
}

function pdo_charsets(bool $emu, string $tag): void
{
    step('utf8mb4', function () use ($emu) {
        $p = pdo_connect(['emu' => $emu]);
        pdo_q($p, 'SELECT id, u, l, HEX(u) AS hu FROM t_cs ORDER BY id');
        pdo_p($p, 'SELECT ? AS p, HEX(?) AS h, CHAR_LENGTH(?) AS cl', ['ñ😀', 'ñ😀', 'ñ😀']);
        out('  quote: ' . fv($p->quote("é'😀\"\\\x00\n")));
    });
    step('latin1 in the DSN', function () use ($emu) {
        $p = pdo_connect(['emu' => $emu, 'charset' => 'latin1']);
        pdo_q($p, 'SELECT @@character_set_client AS csc, @@collation_connection AS coll');
        pdo_q($p, 'SELECT id, u, l FROM t_cs ORDER BY id', false);
        pdo_p($p, 'SELECT ? AS p, HEX(?) AS h', ["\xe9t\xe9", "\xe9t\xe9"], false);
        pdo_x($p, 'SET NAMES utf8mb4');
        pdo_q($p, 'SELECT @@character_set_client AS csc, u FROM t_cs WHERE id = 2', false);
    });
    if (RW) {
        step('write', function () use ($emu, $tag) {
            $p = pdo_connect(['emu' => $emu]);
            $t = "t_cs_pdo_$tag";
            $p->exec("DROP TABLE IF EXISTS $t");
            pdo_x($p, "CREATE TABLE $t (id INT PRIMARY KEY, u VARCHAR(20) CHARACTER SET utf8mb4, l VARCHAR(20) CHARACTER SET latin1)");
            pdo_p($p, "INSERT INTO $t VALUES (?, ?, ?)", [1, '😀 ü', 'ü€']);
            step('emoji into latin1 column', fn() => pdo_p($p, "INSERT INTO $t VALUES (?, ?, ?)", [2, 'x', '😀']));
            pdo_q($p, "SELECT id, u, l, HEX(l) FROM $t ORDER BY id", false);
        });
    }
}

function pdo_errors(bool $emu, string $tag): void
{
    $p = pdo_connect(['emu' => $emu]);
    $after = fn() => pdo_q($p, 'SELECT 1 AS still_alive', false);
    // On a read-only endpoint sluice refuses a statement it cannot classify (1290).
    step('syntax error (query)', fn() => pdo_q($p, RW ? 'SELEC 1' : 'SELECT 1 FROM WHERE'));
    $after();
    step('syntax error (prepare)', fn() => pdo_p($p, RW ? 'SELEC ?' : 'SELECT ? FROM WHERE', [1]));
    $after();
    step('unknown table', fn() => pdo_q($p, 'SELECT * FROM no_such_table'));
    $after();
    step('unknown table (exec)', fn() => pdo_x($p, RW ? 'DELETE FROM no_such_table' : 'SELECT * FROM no_such_table'));
    $after();
    step('syntax error inside a SELECT', fn() => pdo_q($p, 'SELECT * FROM WHERE id = 1'));
    $after();
    step('execute error', fn() => pdo_p($p, 'SELECT ? + (SELECT s FROM t)', [1]));
    $after();
    if (RW) {
        $t = "t_err_pdo_$tag";
        $p->exec("DROP TABLE IF EXISTS $t");
        pdo_x($p, "CREATE TABLE $t (id INT PRIMARY KEY)");
        pdo_x($p, "INSERT INTO $t VALUES (1)");
        step('signal', fn() => pdo_x($p, "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom é', MYSQL_ERRNO = 1644"));
        $after();
        step('duplicate key', fn() => pdo_p($p, "INSERT INTO $t VALUES (?)", [1]));
        $after();
        step('duplicate key (exec)', fn() => pdo_x($p, "INSERT INTO $t VALUES (1)"));
        $after();
    }
    step('ERRMODE_SILENT: errorCode/errorInfo', function () use ($emu) {
        $c = pdo_connect(['emu' => $emu, 'errmode' => PDO::ERRMODE_SILENT]);
        $r = $c->query('SELECT * FROM no_such_table');
        out('  query returned ' . fv($r) . ' errorCode=' . fv($c->errorCode()) . ' errorInfo=' . fv($c->errorInfo()));
        $st = $c->prepare('SELECT ? + (SELECT s FROM t)');
        if ($st === false) {
            out('  prepare returned false errorInfo=' . fv($c->errorInfo()));
        } else {
            out('  execute returned ' . fv($st->execute([1])) . ' stmt errorCode=' . fv($st->errorCode()) . ' errorInfo=' . fv($st->errorInfo()));
        }
        $r = $c->query('SELECT 1');
        out('  then ' . fv($r === false ? false : $r->fetchAll(PDO::FETCH_NUM)) . ' errorCode=' . fv($c->errorCode()));
    });
    step('ERRMODE_WARNING', function () use ($emu) {
        $c = pdo_connect(['emu' => $emu, 'errmode' => PDO::ERRMODE_WARNING]);
        $r = $c->query('SELECT * FROM no_such_table');
        out('  query returned ' . fv($r) . ' errorInfo=' . fv($c->errorInfo()));
    });
    step('connect error: wrong password', fn() => pdo_connect(['emu' => $emu, 'password' => 'wrong']));
    step('connect error: unknown database', fn() => pdo_connect(['emu' => $emu, 'db' => 'no_such_db']));
}

function pdo_big(bool $emu, string $tag): void
{
    $blob = big_blob();
    $text = big_text();
    $id = $emu ? 4 : 5;
    $p = pdo_connect(['emu' => $emu]);
    if (RW) {
        step('insert', function () use ($p, $blob, $text, $id) {
            pdo_p($p, 'INSERT INTO t_big VALUES (?, ?, ?)', [$id, [$blob, PDO::PARAM_LOB], $text]);
        });
        step('insert from a stream', function () use ($p, $blob, $id) {
            $f = fopen('php://memory', 'w+b');
            fwrite($f, $blob);
            rewind($f);
            $st = $p->prepare('UPDATE t_big SET b = ? WHERE id = ?');
            $st->bindValue(1, $f, PDO::PARAM_LOB);
            $st->bindValue(2, $id, PDO::PARAM_INT);
            $st->execute();
            out('  rowCount=' . $st->rowCount() . ' (same value)');
            pdo_q($p, "SELECT LENGTH(b) AS l, SHA1(b) AS h FROM t_big WHERE id = $id");
        });
    }
    step('server side lengths', fn() => pdo_q($p, 'SELECT id, LENGTH(b) AS lb, SHA1(b) AS hb, LENGTH(tx) AS lt, SHA1(tx) AS ht FROM t_big ORDER BY id', false));
    step('read', fn() => pdo_p($p, 'SELECT id, b, tx FROM t_big WHERE id >= ? ORDER BY id', [0]));
    step('read with bindColumn LOB', function () use ($p) {
        $st = $p->prepare('SELECT b FROM t_big ORDER BY id LIMIT 1');
        $st->execute();
        $st->bindColumn(1, $lob, PDO::PARAM_LOB);
        $st->fetch(PDO::FETCH_BOUND);
        $s = is_resource($lob) ? stream_get_contents($lob) : $lob;
        out('  lob: ' . (is_resource($lob) ? 'stream ' : '') . fv($s));
    });
    step('REPEAT', fn() => pdo_q($p, 'SELECT REPEAT(\'x\', 17 * 1024 * 1024) AS r, 1 AS one'));
    step('after', fn() => pdo_q($p, 'SELECT 1 AS still_alive', false));
}

function pdo_load(bool $emu, string $tag): void
{
    $t = "t_load_pdo_$tag";
    $file = CB['work'] . "/php-pdo-$tag-load.csv";
    file_put_contents($file, "1\tone\n2\ttwo\n3\t\\N\n");
    $sql = "LOAD DATA LOCAL INFILE '$file' INTO TABLE $t";
    $p = pdo_connect(['emu' => $emu, 'local_infile' => true]);
    $p->exec("DROP TABLE IF EXISTS $t");
    pdo_x($p, "CREATE TABLE $t (id INT PRIMARY KEY, s VARCHAR(10))");
    step('exec', fn() => pdo_x($p, $sql));
    step('prepared (query)', fn() => pdo_q($p, str_replace('INTO', 'REPLACE INTO', $sql)));
    step('duplicates', fn() => pdo_x($p, str_replace('INTO', 'IGNORE INTO', $sql)));
    step('rows', fn() => pdo_q($p, "SELECT id, s FROM $t ORDER BY id"));
    step('local infile disabled', function () use ($emu, $sql) {
        $c = pdo_connect(['emu' => $emu, 'local_infile' => false]);
        pdo_x($c, $sql);
    });
}

function pdo_reconnect(bool $emu): void
{
    step('new PDO has fresh state', function () use ($emu) {
        $p = pdo_connect(['emu' => $emu]);
        pdo_x($p, "SET @v = 'kept?'");
        $p = null;
        $p = pdo_connect(['emu' => $emu]);
        pdo_q($p, 'SELECT @v AS v, CURRENT_USER() AS cu, DATABASE() AS db');
    });
    step('second account', function () use ($emu) {
        $p = pdo_connect(['emu' => $emu, 'user' => CB['user2'], 'password' => CB['password2']]);
        pdo_q($p, 'SELECT CURRENT_USER() AS cu, DATABASE() AS db, COUNT(*) AS n FROM t_types');
        pdo_q($p, 'SELECT COUNT(*) FROM mysql.user');
    });
    step('persistent connection (PDO keeps session state)', function () use ($emu) {
        $p = pdo_connect(['emu' => $emu, 'persistent' => true]);
        pdo_x($p, "SET @pv = 'persisted'");
        $id1 = $p->query('SELECT CONNECTION_ID()')->fetchColumn();
        $p = null;
        $p = pdo_connect(['emu' => $emu, 'persistent' => true]);
        $id2 = $p->query('SELECT CONNECTION_ID()')->fetchColumn();
        // CONNECTION_ID() not compared: sluice's node connection changes at a change of user.
        pdo_q($p, 'SELECT @pv AS pv');
        pdo_x($p, 'SET @pv = NULL');
    });
}
