<?php
// bench/drivers/pdo.php: short transactions through sluice with PHP PDO_MySQL (mysqlnd), for
// bench/run.sh's part "drivers". Environment: DRV_HOST, DRV_PORT, DRV_USER, DRV_PASSWORD, DRV_DB,
// DRV_MODE (short: DRV_N sessions, each connect, BEGIN, a few statements, COMMIT, disconnect;
// long: one connection doing DRV_N such transactions), DRV_N, DRV_ROWS (ids 1..DRV_ROWS exist in
// sbtest1).
//
// After the connect (what the driver's start-up left) and after each COMMIT, the session asks
// sluice what pins it (SLUICE SHOW LAST ROUTE, column pins: route.PinNames joined by commas, ""
// for none). A session is pinned when any of those answers named a pin. It prints one JSON
// object on one line: sessions, transactions, pinned sessions, the pin names seen with how many
// sessions showed each, the pins right after the connect (the first session's), errors and the
// first error's text. Exit 1 when anything failed.
declare(strict_types=1);

function env(string $name): string
{
    $v = getenv($name);
    if ($v === false || $v === '') {
        fwrite(STDERR, "pdo.php: $name is not set\n");
        exit(2);
    }
    return $v;
}

$host = env('DRV_HOST');
$port = (int) env('DRV_PORT');
$user = env('DRV_USER');
$pass = getenv('DRV_PASSWORD') ?: '';
$db = env('DRV_DB');
$mode = env('DRV_MODE');
$n = (int) env('DRV_N');
$rows = (int) env('DRV_ROWS');
if ($host !== '127.0.0.1' || $n < 1 || $rows < 1 || ($mode !== 'short' && $mode !== 'long')) {
    fwrite(STDERR, "pdo.php: DRV_HOST must be 127.0.0.1, DRV_N and DRV_ROWS positive, DRV_MODE short or long\n");
    exit(2);
}

$res = ['driver' => 'pdo', 'mode' => $mode, 'sessions' => 0, 'transactions' => 0, 'pinned_sessions' => 0,
    'pins' => new stdClass(), 'startup_pins' => null, 'errors' => 0, 'first_error' => ''];
$pinCount = [];

function connect(string $host, int $port, string $db, string $user, string $pass): PDO
{
    // PDO's defaults otherwise (emulated prepares: text protocol, as PHP applications run).
    return new PDO("mysql:host=$host;port=$port;dbname=$db;charset=utf8mb4", $user, $pass, [
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_TIMEOUT => 10,
    ]);
}

// pins: what SLUICE SHOW LAST ROUTE says holds the session now, as a list of names.
function pins(PDO $c): array
{
    $row = $c->query('SLUICE SHOW LAST ROUTE')->fetch(PDO::FETCH_ASSOC);
    return ($row['pins'] ?? '') === '' ? [] : explode(',', $row['pins']);
}

function transaction(PDO $c, int $rows): void
{
    $id = random_int(1, $rows);
    $c->beginTransaction();
    $s = $c->prepare('SELECT c FROM sbtest1 WHERE id = ?');
    $s->execute([$id]);
    $s->fetchAll();
    $u = $c->prepare('UPDATE sbtest1 SET k = k + 1 WHERE id = ?');
    $u->execute([$id]);
    $s->execute([random_int(1, $rows)]);
    $s->fetchAll();
    $c->commit();
}

$c = null;
$seen = [];
$sessions = $mode === 'short' ? $n : 1;
$perSession = $mode === 'short' ? 1 : $n;
for ($i = 0; $i < $sessions; $i++) {
    $seen = [];
    try {
        $c = connect($host, $port, $db, $user, $pass);
        $p = pins($c);
        if ($res['startup_pins'] === null) {
            $res['startup_pins'] = implode(',', $p);
        }
        $seen += array_fill_keys($p, true);
        for ($t = 0; $t < $perSession; $t++) {
            transaction($c, $rows);
            $res['transactions']++;
            $seen += array_fill_keys(pins($c), true);
        }
        $res['sessions']++;
    } catch (Throwable $e) {
        $res['errors']++;
        if ($res['first_error'] === '') {
            $res['first_error'] = get_class($e) . ': ' . $e->getMessage();
        }
    }
    if ($seen) {
        $res['pinned_sessions']++;
        foreach (array_keys($seen) as $name) {
            $pinCount[$name] = ($pinCount[$name] ?? 0) + 1;
        }
    }
    $c = null; // disconnect (COM_QUIT)
}
if ($pinCount) {
    $res['pins'] = $pinCount;
}
echo json_encode($res), "\n";
exit($res['errors'] > 0 ? 1 : 0);
