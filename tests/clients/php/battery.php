<?php
// The PHP client battery: mysqli and PDO_MySQL (both on mysqlnd) against CB_HOST:CB_PORT.
// See README.md here and tests/clients/README.md for the contract. Every scenario prints what
// the driver returned; output must be identical directly against MariaDB and through sluice.
declare(strict_types=1);

const READ_TIMEOUT = 20;   // seconds, every connection (a hang becomes a printed error)
const CURSOR_PROC_TIMEOUT = 6;   // the CALLs of cursor procedures (see README.md)
const BIG = 17 * 1024 * 1024;

function env(string $name): string
{
    $v = getenv($name);
    if ($v === false || $v === '') {
        fwrite(STDERR, "battery: $name is not set\n");
        exit(2);
    }
    return $v;
}

$H = env('CB_HOST');
$P = (int) env('CB_PORT');
$U = env('CB_USER');
$PW = getenv('CB_PASSWORD') ?: '';
$U2 = env('CB_USER2');
$PW2 = getenv('CB_PASSWORD2') ?: '';
$DB = env('CB_DB');
$MODE = env('CB_MODE');
$WORK = env('CB_WORK');
if ($H !== '127.0.0.1' && $H !== 'localhost') {
    fwrite(STDERR, "battery: CB_HOST must be 127.0.0.1\n");
    exit(2);
}
if (!in_array($MODE, ['rw', 'ro', 'errors', 'isolation'], true)) {
    fwrite(STDERR, "battery: CB_MODE must be rw, ro, errors or isolation\n");
    exit(2);
}
define('CB', ['host' => '127.0.0.1', 'port' => $P, 'user' => $U, 'password' => $PW, 'user2' => $U2,
    'password2' => $PW2, 'db' => $DB, 'mode' => $MODE, 'work' => rtrim($WORK, '/')]);
define('RW', $MODE === 'rw');

// ---------------------------------------------------------------- printing

function out(string $s): void
{
    echo $s, "\n";
}

// scrub: what may legitimately differ between two runs (process ids, the scratch path).
function scrub(string $s): string
{
    $s = str_replace(CB['work'], '$CB_WORK', $s);
    $s = preg_replace('/PID=\d+/', 'PID=<pid>', $s);
    $s = preg_replace('/\b127\.0\.0\.1:\d+/', '127.0.0.1:<port>', $s);
    return $s;
}

// fv: a PHP value with its type, binary strings in hex, long strings as length + sha1.
function fv(mixed $v): string
{
    if ($v === null) {
        return 'NULL';
    }
    if (is_int($v)) {
        return "int($v)";
    }
    if (is_float($v)) {
        return 'float(' . var_export($v, true) . ')';
    }
    if (is_bool($v)) {
        return 'bool(' . ($v ? 'true' : 'false') . ')';
    }
    if (is_string($v)) {
        $n = strlen($v);
        if ($n > 256) {
            return "string(len=$n sha1=" . sha1($v) . ')';
        }
        if (preg_match('//u', $v) && !preg_match('/[\x00-\x08\x0b-\x1f\x7f]/', $v)) {
            return "string($n) " . json_encode($v, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES);
        }
        return "string($n) 0x" . bin2hex($v);
    }
    if (is_resource($v)) {
        return 'resource(' . get_resource_type($v) . ')';
    }
    if (is_array($v)) {
        return 'array' . json_encode($v, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_PARTIAL_OUTPUT_ON_ERROR);
    }
    return get_debug_type($v);
}

// sql_shown: a statement as echoed before its result (long or binary text summarised).
function sql_shown(string $sql): string
{
    $sql = preg_replace('/\s+/', ' ', scrub($sql));
    if (!preg_match('//u', $sql) || preg_match('/[\x00-\x08\x0b-\x1f\x7f]/', $sql)) {
        return '<' . strlen($sql) . ' bytes sha1=' . sha1($sql) . '>';
    }
    return mb_like_cut($sql, 240);
}

function mb_like_cut(string $s, int $chars): string
{
    return preg_match('/^.{' . ($chars + 1) . '}/us', $s) ? preg_replace('/^(.{' . $chars . '}).*$/us', '$1', $s) . '...' : $s;
}

function fmt_exc(Throwable $e): string
{
    if ($e instanceof mysqli_sql_exception) {
        return sprintf('mysqli_sql_exception code=%d sqlstate=%s: %s', $e->getCode(), $e->getSqlState(), scrub($e->getMessage()));
    }
    if ($e instanceof PDOException) {
        $ei = $e->errorInfo;
        return sprintf('PDOException code=%s errorInfo=%s: %s', var_export($e->getCode(), true),
            $ei === null ? 'NULL' : scrub(json_encode($ei, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES)),
            scrub($e->getMessage()));
    }
    return get_class($e) . ': ' . scrub($e->getMessage());
}

// PHP warnings and notices (mysqlnd reports protocol trouble this way) are printed in line.
set_error_handler(function (int $no, string $str): bool {
    $kind = match ($no) {
        E_WARNING, E_USER_WARNING => 'warning',
        E_NOTICE, E_USER_NOTICE => 'notice',
        E_DEPRECATED, E_USER_DEPRECATED => 'deprecated',
        default => "error$no",
    };
    out("  php-$kind: " . scrub($str));
    return true;
});

// scenario: a `== name` header, then the body; an exception ends the scenario and is printed.
// Each scenario opens its own connections, so one that breaks its connection harms no other.
function scenario(string $name, callable $fn): void
{
    out("== $name");
    try {
        $fn();
    } catch (Throwable $e) {
        out('  exception: ' . fmt_exc($e));
    }
    gc_collect_cycles();
}

// step: a labelled part of a scenario; an exception is printed and the scenario goes on.
function step(string $label, callable $fn): void
{
    out("-- $label");
    try {
        $fn();
    } catch (Throwable $e) {
        out('  exception: ' . fmt_exc($e));
    }
}

// Deterministic test data.
function big_blob(): string
{
    static $b = null;
    if ($b === null) {
        $b = substr(str_repeat(implode('', array_map('chr', range(0, 255))), intdiv(BIG, 256) + 1), 0, BIG);
    }
    return $b;
}

function big_text(): string
{
    static $t = null;
    if ($t === null) {
        $t = substr(str_repeat("0123456789abcdef'\"\\\n", intdiv(BIG, 20) + 1), 0, BIG);
    }
    return $t;
}

require __DIR__ . '/schema.php';
require __DIR__ . '/mysqli.php';
require __DIR__ . '/pdo.php';
require __DIR__ . '/isolation.php';

// own_errors: CB_MODE=errors, an error sluice raises itself (scripts/client-batteries.sh's
// errors phase). Each driver connects and runs CB_SQL, and prints one line: 'DRIVER: ok' or
// 'DRIVER: error CODE STATE MESSAGE', the login's error included.
function own_errors(string $sql): void
{
    try {
        $m = my_connect();
        $r = $m->query($sql);
        if ($r instanceof mysqli_result) {
            $r->free();
        }
        $m->close();
        out('mysqli: ok');
    } catch (mysqli_sql_exception $e) {
        out(sprintf('mysqli: error %d %s %s', $e->getCode(), $e->getSqlState(), scrub($e->getMessage())));
    }
    try {
        pdo_connect()->query($sql)->fetchAll();
        out('pdo: ok');
    } catch (PDOException $e) {
        $ei = $e->errorInfo;
        if (is_array($ei) && isset($ei[1])) {
            out(sprintf('pdo: error %d %s %s', $ei[1], $ei[0], scrub((string) $ei[2])));
        } elseif (preg_match('/^SQLSTATE\[(\w+)\] \[(\d+)\] (.*)$/s', $e->getMessage(), $mm)) {
            out(sprintf('pdo: error %d %s %s', $mm[2], $mm[1], scrub($mm[3]))); // a login's error
        } else {
            out('pdo: error ' . var_export($e->getCode(), true) . ' ? ' . scrub($e->getMessage()));
        }
    }
}

if (CB['mode'] === 'errors') {
    own_errors(env('CB_SQL'));
    exit(0);
}

out('# php ' . PHP_MAJOR_VERSION . '.' . PHP_MINOR_VERSION . ' mode=' . CB['mode']);

if (CB['mode'] === 'isolation') {
    isolation_scenarios();
    out('== end');
    exit(0);
}

if (RW) {
    scenario('setup', 'setup_schema');
}
mysqli_scenarios();
pdo_scenarios();
out('== end');
exit(0);
