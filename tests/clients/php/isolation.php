<?php
// CB_MODE=isolation (tests/clients/README.md): client A sets every kind of session state, with
// the driver's own API where it has one, and goes idle or leaves; client B opens on the same pool
// and prints what it sees (the server's defaults, its own); A then prints its own state again.
// Directly these are two server connections; through sluice with pool max_per_node 1 they are
// one node connection, so any state that leaks or is lost shows up as a difference.
declare(strict_types=1);

// The state one probe reads, in one row: what A sets, what B must see at its defaults.
const ISO_PROBE = 'SELECT DATABASE() AS db, @@session.sql_mode AS sql_mode, '
    . '@@session.max_statement_time AS max_statement_time, @@character_set_client AS cs_client, '
    . '@@character_set_connection AS cs_connection, @@character_set_results AS cs_results, '
    . '@@collation_connection AS collation, @@session.tx_isolation AS isolation, '
    . '@@session.time_zone AS time_zone, @@autocommit AS autocommit, @@in_transaction AS in_tx, '
    . '@cb_iso_s AS uv_s, @cb_iso_n AS uv_n, LAST_INSERT_ID() AS last_id';

// iso_rounds: the rounds to run (CB_ROUNDS, default all): 'idle' (A stays open, idle, while B
// runs), 'leave' (A leaves holding what pins, B opens afterwards), 'locked' (A leaves holding
// LOCK TABLES).
function iso_rounds(): array
{
    $r = getenv('CB_ROUNDS');
    return preg_split('/[\s,]+/', $r === false || $r === '' ? 'idle leave locked' : $r, -1, PREG_SPLIT_NO_EMPTY);
}

// iso_driver: the operations of one driver the rounds use.
interface IsoDriver
{
    public function name(): string;
    public function connect(?string $db): object;
    /** q runs $sql and prints its rows, or its error. */
    public function q(object $c, string $sql): void;
    public function useDb(object $c, string $db): void;
    public function charset(object $c, string $cs): void;
    public function autocommit(object $c, bool $on): void;
    public function commit(object $c): void;
    public function begin(object $c): void;
    /** prepare a binary statement of one integer parameter. */
    public function prepare(object $c, string $sql): object;
    public function execute(object $st, int $arg): void;
    public function insertId(object $c): string;
    public function close(object $c): void;
}

final class IsoMysqli implements IsoDriver
{
    public function name(): string { return 'mysqli'; }
    public function connect(?string $db): object { return my_connect(['db' => $db]); }
    public function q(object $c, string $sql): void
    {
        try {
            $r = $c->query($sql);
            if ($r instanceof mysqli_result) {
                while ($row = $r->fetch_assoc()) {
                    iso_row($row);
                }
                $r->free();
            } else {
                out("  ok affected={$c->affected_rows} warnings={$c->warning_count}");
            }
        } catch (mysqli_sql_exception $e) {
            out(sprintf('  error %d %s %s', $e->getCode(), $e->getSqlState(), scrub($e->getMessage())));
        }
    }
    public function useDb(object $c, string $db): void { $c->select_db($db); }
    public function charset(object $c, string $cs): void { $c->set_charset($cs); }
    public function autocommit(object $c, bool $on): void { $c->autocommit($on); }
    public function commit(object $c): void { $c->commit(); }
    public function begin(object $c): void { $c->begin_transaction(); }
    public function prepare(object $c, string $sql): object { return $c->prepare($sql); }
    public function execute(object $st, int $arg): void
    {
        $st->bind_param('i', $arg);
        $st->execute();
        $r = $st->get_result();
        while ($row = $r->fetch_assoc()) {
            iso_row($row);
        }
    }
    public function insertId(object $c): string { return (string) $c->insert_id; }
    public function close(object $c): void { $c->close(); }
}

final class IsoPdo implements IsoDriver
{
    public function name(): string { return 'pdo'; }
    public function connect(?string $db): object
    {
        return pdo_connect(['db' => $db, 'emu' => false, 'multi' => false]);
    }
    public function q(object $c, string $sql): void
    {
        try {
            $st = $c->query($sql);
            if ($st->columnCount() > 0) {
                foreach ($st->fetchAll(PDO::FETCH_ASSOC) as $row) {
                    iso_row($row);
                }
            } else {
                out("  ok affected={$st->rowCount()}");
            }
        } catch (PDOException $e) {
            $ei = $e->errorInfo;
            out(sprintf('  error %s %s %s', $ei[1] ?? '?', $ei[0] ?? '?', scrub((string) ($ei[2] ?? $e->getMessage()))));
        }
    }
    public function useDb(object $c, string $db): void { $c->exec("USE `$db`"); }
    public function charset(object $c, string $cs): void { $c->exec("SET NAMES $cs"); }
    public function autocommit(object $c, bool $on): void { $c->setAttribute(PDO::ATTR_AUTOCOMMIT, $on); }
    public function commit(object $c): void { $c->exec('COMMIT'); }
    public function begin(object $c): void { $c->beginTransaction(); }
    public function prepare(object $c, string $sql): object { return $c->prepare($sql); }
    public function execute(object $st, int $arg): void
    {
        $st->bindValue(1, $arg, PDO::PARAM_INT);
        $st->execute();
        foreach ($st->fetchAll(PDO::FETCH_ASSOC) as $row) {
            iso_row($row);
        }
    }
    public function insertId(object $c): string { return (string) $c->lastInsertId(); }
    public function close(object $c): void { /* PDO closes when the last reference goes */ }
}

function iso_row(array $row): void
{
    foreach ($row as $k => $v) {
        out("  $k=" . ($v === null ? 'NULL' : (string) $v));
    }
}

// iso_set: A's state, all of it movable (nothing that pins a pooled session).
function iso_set(IsoDriver $d, object $a): void
{
    step('A sets database, charset, session variables, isolation, time zone, user variables', function () use ($d, $a) {
        $d->useDb($a, CB['db']);
        $d->charset($a, 'latin1');
        $d->q($a, "SET SESSION sql_mode = 'ANSI_QUOTES,NO_ZERO_DATE', max_statement_time = 7");
        $d->q($a, 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
        $d->q($a, "SET time_zone = '+03:00'");
        $d->q($a, "SET @cb_iso_s = 'A-string', @cb_iso_n = 42");
    });
    step('A autocommit off, an insert (LAST_INSERT_ID), commit', function () use ($d, $a) {
        $d->autocommit($a, false);
        $d->q($a, "INSERT INTO cb_iso_t (v) VALUES ('A')");
        out('  insert id ' . $d->insertId($a));
        $d->commit($a);
    });
}

function iso_idle(IsoDriver $d): void
{
    scenario($d->name() . ' isolation idle', function () use ($d) {
        $a = $d->connect(null);
        iso_set($d, $a);
        $st = null;
        step('A prepares a binary statement', function () use ($d, $a, &$st) {
            $st = $d->prepare($a, 'SELECT ? + 1 AS p');
            $d->execute($st, 41);
        });
        step('A probe', fn() => $d->q($a, ISO_PROBE));
        $d->commit($a); // idle, no transaction open
        $b = $d->connect(null);
        step('B probe (defaults)', fn() => $d->q($b, ISO_PROBE));
        step('B warnings', fn() => $d->q($b, 'SHOW WARNINGS'));
        step('B sets its own', function () use ($d, $b) {
            $d->q($b, "SET time_zone = '-02:00', sql_mode = ''");
            $d->q($b, "SET @cb_iso_s = 'B-string'");
            $bs = $d->prepare($b, 'SELECT ? * 2 AS p');
            $d->execute($bs, 21);
            $d->q($b, ISO_PROBE);
        });
        step('A probe again', fn() => $d->q($a, ISO_PROBE));
        step('A executes its statement again', fn() => $st === null ? out('  none') : $d->execute($st, 99));
        step('A reads its table', fn() => $d->q($a, 'SELECT v FROM cb_iso_t ORDER BY id'));
        $d->commit($a);
        $d->close($b);
        $d->close($a);
    });
}

function iso_leave(IsoDriver $d): void
{
    scenario($d->name() . ' isolation leave', function () use ($d) {
        $a = $d->connect(null);
        iso_set($d, $a);
        step('A pins: temporary table, GET_LOCK, SQL PREPARE, binary prepare', function () use ($d, $a) {
            $d->q($a, 'CREATE TEMPORARY TABLE cb_iso_tmp (a INT)');
            $d->q($a, 'INSERT INTO cb_iso_tmp VALUES (1)');
            $d->q($a, "SELECT GET_LOCK('cb_iso_lock', 0) AS got");
            $d->q($a, "PREPARE cb_iso_p FROM 'SELECT 1 AS one'");
            $d->execute($d->prepare($a, 'SELECT ? + 1 AS p'), 1);
        });
        step('A opens a transaction, inserts, warns', function () use ($d, $a) {
            $d->autocommit($a, true);
            $d->begin($a);
            $d->q($a, "INSERT INTO cb_iso_t (v) VALUES ('A-uncommitted')");
            $d->q($a, "SELECT CAST('1x' AS SIGNED) AS w");
            $d->q($a, 'SHOW WARNINGS');
            $d->q($a, ISO_PROBE);
        });
        $d->close($a);
        unset($a);
        gc_collect_cycles();
        iso_after($d);
    });
}

function iso_locked(IsoDriver $d): void
{
    scenario($d->name() . ' isolation locked', function () use ($d) {
        $a = $d->connect(CB['db']);
        step('A LOCK TABLES, insert', function () use ($d, $a) {
            $d->q($a, 'LOCK TABLES cb_iso_t WRITE');
            $d->q($a, "INSERT INTO cb_iso_t (v) VALUES ('A-locked')");
        });
        $d->close($a);
        unset($a);
        gc_collect_cycles();
        $b = $d->connect(CB['db']);
        step('B writes the table', function () use ($d, $b) {
            $d->q($b, 'SET SESSION lock_wait_timeout = 10');
            $d->q($b, "INSERT INTO cb_iso_t (v) VALUES ('B-after-lock')");
            $d->q($b, 'SELECT v FROM cb_iso_t ORDER BY id');
        });
        $d->close($b);
    });
}

// iso_after: B, once A left: none of A's state, pins included.
function iso_after(IsoDriver $d): void
{
    $b = $d->connect(null);
    step('B warnings', fn() => $d->q($b, 'SHOW WARNINGS'));
    step('B probe (defaults)', fn() => $d->q($b, ISO_PROBE));
    step("B reads A's temporary table", fn() => $d->q($b, 'SELECT a FROM ' . CB['db'] . '.cb_iso_tmp'));
    step("B takes A's lock", function () use ($d, $b) {
        $d->q($b, "SELECT GET_LOCK('cb_iso_lock', 10) AS got");
        $d->q($b, "SELECT RELEASE_LOCK('cb_iso_lock') AS released");
    });
    step("B executes A's SQL prepared statement", fn() => $d->q($b, 'EXECUTE cb_iso_p'));
    step("B reads A's uncommitted row", fn() => $d->q($b, 'SELECT COUNT(*) AS n FROM ' . CB['db'] . ".cb_iso_t WHERE v = 'A-uncommitted'"));
    $d->close($b);
}

function isolation_scenarios(): void
{
    foreach ([new IsoMysqli(), new IsoPdo()] as $d) {
        scenario($d->name() . ' isolation setup', function () use ($d) {
            // Quiet: whether the table existed before differs between runs (a note).
            $c = $d->connect(CB['db']);
            ob_start();
            $d->q($c, 'DROP TABLE IF EXISTS cb_iso_t');
            $d->q($c, 'CREATE TABLE cb_iso_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))');
            ob_end_clean();
            $d->close($c);
        });
        foreach (iso_rounds() as $r) {
            match ($r) {
                'idle' => iso_idle($d),
                'leave' => iso_leave($d),
                'locked' => iso_locked($d),
                default => throw new RuntimeException("CB_ROUNDS: unknown round '$r'"),
            };
        }
    }
}
