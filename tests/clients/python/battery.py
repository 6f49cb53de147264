"""Client battery for Python: PyMySQL and MySQLdb (mysqlclient), see README.md.

Run by run.sh with Debian's /usr/bin/python3. Every scenario runs once per driver and prints
'== DRIVER: name' before it. Output is deterministic; values are printed with repr() so their
Python types show (Decimal, datetime, timedelta, bytes, ...).
"""

import datetime
import decimal
import hashlib
import os
import sys
import traceback

import MySQLdb
import MySQLdb.constants.CLIENT
import MySQLdb.constants.FIELD_TYPE
import MySQLdb.cursors
import pymysql
import pymysql.constants.CLIENT
import pymysql.constants.FIELD_TYPE
import pymysql.cursors
import pymysql.err

HOST = os.environ["CB_HOST"]
PORT = int(os.environ["CB_PORT"])
USER = os.environ["CB_USER"]
PASSWORD = os.environ["CB_PASSWORD"]
USER2 = os.environ["CB_USER2"]
PASSWORD2 = os.environ["CB_PASSWORD2"]
DB = os.environ["CB_DB"]
MODE = os.environ.get("CB_MODE", "rw")
WORK = os.environ["CB_WORK"]
RW = MODE == "rw"

if HOST not in ("127.0.0.1", "localhost"):
    sys.exit(f"battery: CB_HOST must be 127.0.0.1 (got {HOST})")

TIMEOUT = 20  # read/write timeout of every connection, seconds
# CALLs of procedures that open a cursor currently hang through sluice (known bug): their
# connections wait less, so that the run stays within the runner's limit.
CURSOR_TIMEOUT = 8
BIG = 17 * 1024 * 1024  # bytes: above the 16 MiB packet limit, below max_allowed_packet (48M)

WRITES = ("rw",)


def out(*args):
    print(*args, flush=True)


def sha(b):
    return hashlib.sha256(b).hexdigest()[:16]


def R(v):
    """repr() of a value, stable and short."""
    if isinstance(v, (bytes, bytearray)) and len(v) > 96:
        return f"<{type(v).__name__} len={len(v)} sha256={sha(bytes(v))}>"
    if isinstance(v, str) and len(v) > 200:
        return f"<str len={len(v)} utf8-sha256={sha(v.encode('utf-8', 'surrogatepass'))}>"
    if isinstance(v, (set, frozenset)):
        return f"{type(v).__name__}({{{', '.join(sorted(R(x) for x in v))}}})"
    if isinstance(v, tuple):
        return "(" + ", ".join(R(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(R(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{R(k)}: {R(x)}" for k, x in sorted(v.items())) + "}"
    return repr(v)


def short(sql, n=110):
    s = " ".join(str(sql).split())
    return s if len(s) <= n else s[:n] + f"... ({len(sql)} chars)"


def stable(msg):
    return str(msg).replace(WORK, "$CB_WORK")


class Broken(Exception):
    """The connection can no longer be used: the scenario stops, the next one reconnects."""


def is_server_error(code):
    return isinstance(code, int) and (1000 <= code < 2000 or code >= 3000)


def breaks_connection(code):
    """Client errors (CR_*, 2000-2999) and PyMySQL's 0 (closed) mean the connection is gone; a
    non-numeric code is a driver-side error raised before anything was sent."""
    return isinstance(code, int) and (code == 0 or 2000 <= code < 3000)


# PyMySQL parses the SQLSTATE of an ERR packet but drops it: keep it on the exception.
_pymysql_raise = pymysql.err.raise_mysql_exception


def _raise_with_sqlstate(data):
    try:
        _pymysql_raise(data)
    except pymysql.err.MySQLError as e:
        e.sqlstate = data[4:9].decode("ascii", "replace") if data[3:4] == b"#" else None
        raise


pymysql.err.raise_mysql_exception = _raise_with_sqlstate


def type_names(mod):
    names = {}
    for k, v in vars(mod).items():
        if k.isupper() and isinstance(v, int):
            names.setdefault(v, k)
    return names


class PyMySQL:
    name = "pymysql"
    Error = pymysql.err.Error
    types = type_names(pymysql.constants.FIELD_TYPE)

    def connect(self, user=USER, password=PASSWORD, db=DB, charset="utf8mb4", timeout=TIMEOUT,
                multi=True, autocommit=True):
        return pymysql.connect(
            host=HOST, port=PORT, user=user, password=password, database=db, charset=charset,
            client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS if multi else 0,
            local_infile=True, connect_timeout=10, read_timeout=timeout, write_timeout=timeout,
            autocommit=autocommit, max_allowed_packet=64 * 1024 * 1024)

    def unbuffered(self):
        return pymysql.cursors.SSCursor

    def describe_error(self, e, conn):
        code = e.args[0] if e.args else None
        msg = e.args[1] if len(e.args) > 1 else ""
        return code, getattr(e, "sqlstate", None), msg

    def ok(self, conn, cur):
        """What the driver exposes of an OK packet (or of the EOF after rows)."""
        res = cur._result
        status = conn.server_status or 0
        return (f"rowcount={cur.rowcount} affected_rows()={conn.affected_rows()} "
                f"lastrowid={cur.lastrowid!r} insert_id()={conn.insert_id()} "
                f"warning_count={res.warning_count if res else None} "
                f"message={res.message if res else None!r} "
                f"in_trans={bool(status & 1)} autocommit={bool(status & 2)}")

    def columns(self, cur):
        res = cur._result
        lines = []
        for f in res.fields if res and res.fields else ():
            lines.append(
                f"{f.name!r} org_name={f.org_name!r} table={f.table_name!r} org_table={f.org_table!r} "
                f"db={f.db!r} type={self.types.get(f.type_code, f.type_code)} charsetnr={f.charsetnr} "
                f"length={f.length} flags={f.flags:#x} scale={f.scale}")
        return lines


class MySQLdbDriver:
    name = "mysqldb"
    Error = MySQLdb.Error
    types = type_names(MySQLdb.constants.FIELD_TYPE)

    def connect(self, user=USER, password=PASSWORD, db=DB, charset="utf8mb4", timeout=TIMEOUT,
                multi=True, autocommit=True):
        # mysqlclient adds MULTI_STATEMENTS itself only when the client library's version is
        # >= 4.1, which libmariadb's 3.x is not: the flag is what the battery passes.
        # libmariadb asks for MULTI_RESULTS whatever the flags.
        return MySQLdb.connect(
            host=HOST, port=PORT, user=user, password=password, database=db, charset=charset,
            client_flag=MySQLdb.constants.CLIENT.MULTI_STATEMENTS if multi else 0,
            local_infile=1, connect_timeout=10, read_timeout=timeout, write_timeout=timeout,
            autocommit=autocommit)

    def unbuffered(self):
        return MySQLdb.cursors.SSCursor

    def describe_error(self, e, conn):
        code = e.args[0] if e.args else None
        msg = e.args[1] if len(e.args) > 1 else ""
        state = None
        if conn is not None and is_server_error(code):
            try:
                state = conn.sqlstate()
            except Exception:
                pass
        return code, state, msg

    def ok(self, conn, cur):
        return (f"rowcount={cur.rowcount} affected_rows()={conn.affected_rows()} "
                f"lastrowid={cur.lastrowid!r} insert_id()={conn.insert_id()} "
                f"warning_count()={conn.warning_count()} info()={conn.info()!r}")

    def columns(self, cur):
        lines = []
        for d, fl in zip(cur.description or (), cur.description_flags or ()):
            name, tc, dsize, isize, prec, scale, nullok = d
            lines.append(f"{name!r} type={self.types.get(tc, tc)} display_size={dsize} "
                         f"internal_size={isize} precision={prec} scale={scale} null_ok={nullok} "
                         f"flags={fl:#x}")
        return lines


class Session:
    """One scenario's view of a driver: its connections, printing helpers."""

    def __init__(self, drv):
        self.drv = drv
        self.conns = []

    def connect(self, label="connect", **kw):
        try:
            c = self.drv.connect(**kw)
        except self.drv.Error as e:
            self.error(e, None, label)
            raise Broken()
        self.conns.append(c)
        return c

    def close_all(self):
        for c in self.conns:
            try:
                c.close()
            except Exception:
                pass
        self.conns = []

    def error(self, e, conn, label="error"):
        code, state, msg = self.drv.describe_error(e, conn)
        out(f"   ! {type(e).__name__} code={code!r} sqlstate={state!r} message={stable(msg)!r}")
        return code

    def handle(self, e, conn, client_side=False):
        """Print a driver exception; raise Broken when the connection is gone. client_side: a
        non-driver exception is expected before anything is sent (the connection is fine)."""
        if isinstance(e, self.drv.Error):
            code = self.error(e, conn)
            if breaks_connection(code):
                raise Broken()
            return
        out(f"   ! {type(e).__name__}: {stable(e)}")
        if not client_side:
            raise Broken()

    def result(self, conn, cur, meta=False, fetch="all"):
        """Print the current result of cur: rows and columns, or the OK packet's fields."""
        if cur.description:
            if meta:
                out("   columns:")
                for line in self.drv.columns(cur):
                    out(f"     {line}")
            else:
                out("   columns: " + ", ".join(
                    f"{d[0]}:{self.drv.types.get(d[1], d[1])}" for d in cur.description))
            rows = cur.fetchall()
            for r in rows:
                if meta:
                    out("   row:")
                    for d, v in zip(cur.description, r):
                        out(f"     {d[0]} = {R(v)}")
                else:
                    out(f"   row: {R(tuple(r))}")
            out(f"   rows: {len(rows)}; {self.drv.ok(conn, cur)}")
        else:
            out(f"   ok: {self.drv.ok(conn, cur)}")

    def q(self, conn, sql, args=None, meta=False, cursorclass=None, label=None, client_side=False):
        """Execute sql, print every result set it returns (or the error)."""
        out(f"-- {label or short(sql)}")
        cur = conn.cursor(cursorclass) if cursorclass else conn.cursor()
        try:
            cur.execute(sql, args)
            n = 0
            while True:
                if n:
                    out(f"   (result set {n + 1})")
                self.result(conn, cur, meta)
                n += 1
                if not cur.nextset():
                    break
        except Exception as e:
            self.handle(e, conn, client_side)
        finally:
            try:
                cur.close()
            except Exception:
                pass
        return cur

    def part(self, label, fn):
        """A part of a scenario with its own connection: a broken one stops only this part."""
        out(f"-- ({label})")
        try:
            fn()
        except Broken:
            out("   (part stopped)")

    def call(self, conn, what, fn):
        """Run a driver method, print what it returns (or the error)."""
        out(f"-- {what}")
        try:
            v = fn()
            out(f"   -> {R(v)}")
            return v
        except Exception as e:
            self.handle(e, conn)


SCENARIOS = []


def scenario(name, modes=("rw", "ro")):
    def reg(fn):
        SCENARIOS.append((name, modes, fn))
        return fn
    return reg


def tname(s, base):
    return f"{base}_{s.drv.name}"


# ---------------------------------------------------------------------------------------------
# setup (rw only): the shared tables and procedures; each driver's own tables are created by
# its scenarios. The ro run reads what this leaves behind.

TYPES_DDL = """CREATE TABLE t_types (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  dec1 DECIMAL(10,2), dec2 DECIMAL(65,30), f FLOAT, d DOUBLE, b1 BIT(1), b64 BIT(64),
  dt DATE, tm TIME, tm6 TIME(6), dtt DATETIME, dtt6 DATETIME(6), ts TIMESTAMP NULL,
  ts6 TIMESTAMP(6) NULL, y YEAR,
  c CHAR(10), vc VARCHAR(100), tx TEXT, bl BLOB, bn BINARY(4), vb VARBINARY(10),
  e ENUM('a','b','c'), st SET('x','y','z'), j JSON, g GEOMETRY NULL
) DEFAULT CHARSET=utf8mb4"""

TYPES_ROWS = [
    """INSERT INTO t_types VALUES (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0,
  -9223372036854775808, 0, -99999999.99, -12345678901234567890.123456789012345678901234567890,
  -3.40282e38, -1.7976931348623157e308, b'0', b'0', '1000-01-01', '-838:59:59',
  '-838:59:59.000000', '1000-01-01 00:00:00', '1000-01-01 00:00:00.000000',
  '1970-01-01 00:00:01', '1970-01-01 00:00:01.000000', 1901, '', '', '', '', X'00000000', X'',
  'a', '', '[]', ST_GeomFromText('POINT(0 0)'))""",
    """INSERT INTO t_types VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647,
  4294967295, 9223372036854775807, 18446744073709551615, 99999999.99,
  12345678901234567890.123456789012345678901234567890, 3.40282e38, 1.7976931348623157e308,
  b'1', b'1111111111111111111111111111111111111111111111111111111111111111', '9999-12-31',
  '838:59:59', '838:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999',
  '2038-01-19 03:14:07', '2038-01-19 03:14:07.999999', 2155, 'char10xxxx', REPEAT('v', 100),
  'text', X'DEADBEEF', X'01020304', X'FFFEFD', 'c', 'x,y,z',
  '{"a": 1, "b": [true, false, null], "c": {"d": "e\\\\u00e9"}}',
  ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'))""",
    """INSERT INTO t_types VALUES (3, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, 1.50, 0.000000000000000000000000000001,
  3.14, 2.718281828459045, b'1', b'101', '2024-02-29', '12:34:56', '-00:00:01.500000',
  '2024-02-29 12:34:56', '2024-02-29 12:34:56.123456', '2024-02-29 12:34:56',
  '2024-02-29 12:34:56.654321', 2024, 'abc', 'héllo wörld ✓ 😀', 'ça va? 漢字',
  X'00FF00FF', X'61626364', X'00', 'b', 'x,z', '{"k": "v", "n": 1.5e300, "emoji": "😀"}',
  ST_GeomFromText('LINESTRING(1 2,3 4)'))""",
    """INSERT INTO t_types (id) VALUES (4)""",
    """INSERT INTO t_types (id, dt, dtt, y) VALUES (5, '0000-00-00', '0000-00-00 00:00:00', 0)""",
]

PROCS = [
    "DROP PROCEDURE IF EXISTS p_multi",
    """CREATE PROCEDURE p_multi()
BEGIN
  SELECT 1 AS one, 'two' AS two;
  SELECT id, s FROM t_proc ORDER BY id;
  UPDATE t_proc SET n = n + 1 WHERE id = 1;
  SELECT n FROM t_proc WHERE id = 1;
END""",
    "DROP PROCEDURE IF EXISTS p_out",
    """CREATE PROCEDURE p_out(IN a INT, OUT b INT, INOUT c VARCHAR(40))
BEGIN
  SET b = a * 2;
  SET c = CONCAT(IFNULL(c, 'null'), '+', a);
  SELECT a AS a_in, b AS b_now, c AS c_now;
END""",
    "DROP PROCEDURE IF EXISTS p_cursor",
    """CREATE PROCEDURE p_cursor()
BEGIN
  DECLARE v VARCHAR(20);
  DECLARE c CURSOR FOR SELECT s FROM t_proc ORDER BY id;
  OPEN c;
  FETCH c INTO v;
  CLOSE c;
  SELECT v;
END""",
    "DROP PROCEDURE IF EXISTS p_cursor_loop",
    """CREATE PROCEDURE p_cursor_loop(OUT total INT, OUT last VARCHAR(20))
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE v VARCHAR(20);
  DECLARE c CURSOR FOR SELECT s FROM t_proc ORDER BY id;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  SET total = 0;
  OPEN c;
  l: LOOP
    FETCH c INTO v;
    IF done THEN LEAVE l; END IF;
    SET total = total + 1;
    SET last = v;
  END LOOP;
  CLOSE c;
END""",
]


def setup():
    """rw only: drop and recreate the shared tables and procedures (quietly, with PyMySQL)."""
    out("== setup")
    c = PyMySQL().connect()
    cur = c.cursor()
    tables = ["t_types", "t_proc", "t_big"]
    for d in ("pymysql", "mysqldb"):
        tables += [f"{b}_{d}" for b in ("t_dml", "t_tx", "t_ms", "t_err", "t_load", "t_cs")]
    for t in tables:
        cur.execute(f"DROP TABLE IF EXISTS {t}")
    cur.execute(TYPES_DDL)
    for sql in TYPES_ROWS:
        cur.execute(sql)
    cur.execute("CREATE TABLE t_proc (id INT PRIMARY KEY, s VARCHAR(20), n INT)")
    cur.execute("INSERT INTO t_proc VALUES (1, 'first', 0), (2, 'second', 0), (3, 'third', 0)")
    cur.execute("CREATE TABLE t_big (id INT PRIMARY KEY, lb LONGBLOB, lt LONGTEXT) DEFAULT CHARSET=utf8mb4")
    for sql in PROCS:
        cur.execute(sql)
    cur.execute("SELECT COUNT(*) FROM t_types")
    out(f"   t_types rows: {cur.fetchone()[0]}")
    c.close()


# ---------------------------------------------------------------------------------------------
# 1. types, text protocol; SQL-level prepared statements (neither driver does COM_STMT_*)

TYPE_COLS = ("id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, dec1, dec2, f, d, b1, b64, dt, tm, tm6, "
             "dtt, dtt6, ts, ts6, y, c, vc, tx, bl, bn, vb, e, st, j, g")


@scenario("types_text")
def types_text(s):
    c = s.connect()
    s.q(c, "SET time_zone = '+00:00'")
    s.q(c, f"SELECT {TYPE_COLS} FROM t_types ORDER BY id", meta=True)
    s.q(c, "SELECT id, ST_AsText(g) AS wkt, ST_SRID(g) AS srid, JSON_TYPE(j) AS jt, "
           "JSON_EXTRACT(j, '$.a') AS ja, HEX(b64) AS hb, b64 + 0 AS nb FROM t_types ORDER BY id")
    s.q(c, "SELECT -9223372036854775808 AS smin, 18446744073709551615 AS umax, 1.5 AS dec_lit, "
           "1e300 AS dbl_lit, CAST(1 AS UNSIGNED) AS u, NULL AS n, X'00ff' AS bin_lit, "
           "_utf8mb4'é' AS txt, DATE'2024-01-02' AS d, TIME'-01:02:03.5' AS t, "
           "TIMESTAMP'2024-01-02 03:04:05.678' AS dt, CAST('{\"x\":1}' AS JSON) AS js, "
           "JSON_OBJECT('k', 1) AS jo", meta=True)
    # client-side parameter interpolation by the driver
    s.q(c, f"SELECT {TYPE_COLS} FROM t_types WHERE id IN (%s, %s) AND c <> %s ORDER BY id",
        (2, 3, "zz"), label="SELECT ... WHERE id IN (%s, %s) AND c <> %s, params (2, 3, 'zz')")


@scenario("types_sql_prepare")
def types_sql_prepare(s):
    # PREPARE/EXECUTE are server-side prepared statements, but their results come back in the
    # text protocol: neither PyMySQL nor MySQLdb speaks COM_STMT_PREPARE/EXECUTE.
    c = s.connect()
    s.q(c, "SET time_zone = '+00:00'")
    s.q(c, f"PREPARE st FROM 'SELECT {TYPE_COLS} FROM t_types WHERE id >= ? ORDER BY id'")
    s.q(c, "SET @lo = 2")
    s.q(c, "EXECUTE st USING @lo", meta=True)
    s.q(c, "EXECUTE st USING 4", meta=False)
    s.q(c, "DEALLOCATE PREPARE st")
    s.q(c, "EXECUTE st USING 1")


# ---------------------------------------------------------------------------------------------
# 2. DML OK packets


@scenario("dml", modes=WRITES)
def dml(s):
    t = tname(s, "t_dml")
    c = s.connect()
    s.q(c, f"DROP TABLE IF EXISTS {t}")
    s.q(c, f"CREATE TABLE {t} (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(10) UNIQUE, "
           f"n INT NOT NULL DEFAULT 0, ti TINYINT, d DECIMAL(6,2), ts DATETIME(6), b VARBINARY(8))")
    s.q(c, f"INSERT INTO {t} (k, n) VALUES ('a', 1)")
    s.q(c, f"INSERT INTO {t} (k, n) VALUES ('b', 2), ('c', 3), ('d', 4)")
    s.q(c, "SELECT LAST_INSERT_ID()")
    s.q(c, f"UPDATE {t} SET n = n + 10 WHERE n >= 2")
    s.q(c, f"UPDATE {t} SET n = n WHERE k = 'a'")
    s.q(c, f"UPDATE {t} SET n = 0 WHERE k = 'nope'")
    s.q(c, f"INSERT INTO {t} (k, n) VALUES ('a', 100) ON DUPLICATE KEY UPDATE n = n + 100")
    s.q(c, f"INSERT INTO {t} (k, n) VALUES ('e', 5) ON DUPLICATE KEY UPDATE n = n + 100")
    s.q(c, f"INSERT INTO {t} (k, n) VALUES ('b', 1), ('f', 6) ON DUPLICATE KEY UPDATE n = VALUES(n)")
    s.q(c, f"INSERT IGNORE INTO {t} (k, n) VALUES ('a', 1), ('g', 7)")
    s.q(c, f"REPLACE INTO {t} (id, k, n) VALUES (1, 'a', 1)")
    s.q(c, f"INSERT INTO {t} (id, k) VALUES (100, 'h')")
    s.q(c, f"INSERT INTO {t} (k) VALUES ('i')")
    s.q(c, "SELECT LAST_INSERT_ID(42), LAST_INSERT_ID()")
    # warnings: out of range, truncation (non-strict), then SHOW WARNINGS and the driver's own
    s.q(c, "SET SESSION sql_mode = ''")
    s.q(c, f"INSERT INTO {t} (k, n, ti, d) VALUES ('w1', 1, 300, 12345.678), ('w2', 'x', -300, 1.005)")
    s.q(c, "SHOW WARNINGS")
    s.q(c, f"UPDATE {t} SET ti = 1000 WHERE k LIKE 'w%'")
    s.q(c, "SHOW COUNT(*) WARNINGS")
    s.call(c, "conn.show_warnings()", c.show_warnings)
    s.q(c, "SET SESSION sql_mode = DEFAULT")
    # typed parameters, escaped by the driver; executemany: one multi-row INSERT
    out("-- executemany INSERT with typed params")
    cur = c.cursor()
    try:
        n = cur.executemany(
            f"INSERT INTO {t} (k, n, d, ts, b) VALUES (%s, %s, %s, %s, %s)",
            [("p1", 1, decimal.Decimal("1.25"), datetime.datetime(2024, 1, 2, 3, 4, 5, 600000), b"\x00'\\\""),
             ("p2", 2, None, datetime.date(2024, 5, 6), b"\xff"),
             ("p3", 3, 3.5, None, None)])
        out(f"   executemany -> {n!r}")
        s.result(c, cur)
    except Exception as e:
        s.handle(e, c)
    s.q(c, f"DELETE FROM {t} WHERE k IN ('c', 'd')")
    s.q(c, f"DELETE FROM {t} WHERE k = 'nope'")
    s.q(c, f"SELECT id, k, n, ti, d, ts, b FROM {t} ORDER BY id")
    s.q(c, f"SELECT COUNT(*) FROM {t}")


# ---------------------------------------------------------------------------------------------
# 3. transactions and autocommit


@scenario("transactions", modes=WRITES)
def transactions(s):
    t = tname(s, "t_tx")
    c = s.connect()
    s.q(c, f"DROP TABLE IF EXISTS {t}")
    s.q(c, f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB")
    s.call(c, "conn.get_autocommit()", c.get_autocommit)
    s.call(c, "conn.autocommit(False)", lambda: c.autocommit(False))
    s.call(c, "conn.get_autocommit()", c.get_autocommit)
    s.q(c, "SELECT @@autocommit")
    s.q(c, f"INSERT INTO {t} VALUES (1, 'rolled')")
    s.q(c, f"SELECT * FROM {t} ORDER BY id")
    s.call(c, "conn.rollback()", c.rollback)
    s.q(c, f"SELECT COUNT(*) AS after_rollback FROM {t}")
    s.q(c, f"INSERT INTO {t} VALUES (2, 'kept')")
    s.call(c, "conn.commit()", c.commit)
    s.call(c, "conn.autocommit(True)", lambda: c.autocommit(True))
    s.call(c, "conn.get_autocommit()", c.get_autocommit)
    s.call(c, "conn.begin()", c.begin)
    s.q(c, f"INSERT INTO {t} VALUES (3, 'rolled')")
    s.call(c, "conn.rollback()", c.rollback)
    s.q(c, "BEGIN")
    s.q(c, f"INSERT INTO {t} VALUES (4, 'rolled')")
    s.q(c, "ROLLBACK")
    s.q(c, "START TRANSACTION")
    s.q(c, f"INSERT INTO {t} VALUES (5, 'kept')")
    s.q(c, f"UPDATE {t} SET v = 'kept2' WHERE id = 2")
    s.q(c, "COMMIT")
    s.q(c, "SET autocommit = 0")
    s.q(c, "SELECT @@autocommit")
    s.q(c, f"INSERT INTO {t} VALUES (6, 'rolled')")
    s.q(c, "ROLLBACK")
    s.q(c, f"INSERT INTO {t} VALUES (7, 'kept')")
    s.q(c, "COMMIT")
    s.q(c, "SET autocommit = 1")
    s.q(c, "START TRANSACTION READ ONLY")
    s.q(c, f"INSERT INTO {t} VALUES (8, 'ro')")
    s.q(c, "COMMIT")
    s.q(c, "BEGIN")
    s.q(c, "SAVEPOINT sp1")
    s.q(c, f"INSERT INTO {t} VALUES (9, 'rolled')")
    s.q(c, "ROLLBACK TO SAVEPOINT sp1")
    s.q(c, f"INSERT INTO {t} VALUES (10, 'kept')")
    s.q(c, "COMMIT")
    # rollback discards: a second connection sees only the committed rows
    c2 = s.connect()
    s.q(c2, f"SELECT * FROM {t} ORDER BY id")
    # an open transaction is not visible from another connection until COMMIT
    s.q(c, "BEGIN")
    s.q(c, f"INSERT INTO {t} VALUES (11, 'late')")
    s.q(c2, f"SELECT COUNT(*) AS before_commit FROM {t}")
    s.q(c, "COMMIT")
    s.q(c2, f"SELECT COUNT(*) AS after_commit FROM {t}")


@scenario("transactions_ro", modes=("ro",))
def transactions_ro(s):
    c = s.connect()
    s.q(c, "START TRANSACTION READ ONLY")
    s.q(c, "SELECT COUNT(*) FROM t_types")
    s.q(c, "COMMIT")
    s.call(c, "conn.begin()", c.begin)
    s.q(c, "SELECT id FROM t_types ORDER BY id")
    s.call(c, "conn.rollback()", c.rollback)
    s.call(c, "conn.autocommit(False)", lambda: c.autocommit(False))
    s.q(c, "SELECT @@autocommit, COUNT(*) FROM t_proc")
    s.call(c, "conn.commit()", c.commit)
    s.call(c, "conn.autocommit(True)", lambda: c.autocommit(True))
    s.q(c, "SELECT @@autocommit")


# ---------------------------------------------------------------------------------------------
# 4. multi-statements, several result sets


@scenario("multi_statements", modes=WRITES)
def multi_statements(s):
    t = tname(s, "t_ms")
    c = s.connect()
    s.q(c, f"DROP TABLE IF EXISTS {t}; CREATE TABLE {t} (id INT PRIMARY KEY, v INT)")
    s.q(c, f"SELECT 1 AS a; INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30); SET @x = 5; "
           f"SELECT @x AS x, COUNT(*) AS n FROM {t}; UPDATE {t} SET v = v + 1; "
           f"DELETE FROM {t} WHERE id = 1; SELECT * FROM {t} ORDER BY id")
    s.q(c, f"INSERT INTO {t} VALUES (4, 40); SELECT LAST_INSERT_ID(); "
           f"INSERT INTO {t} VALUES (5, 50), (6, 60)")
    s.q(c, f"SELECT 1; SELECT * FROM nope_{s.drv.name}; SELECT 3")
    s.q(c, "SELECT 'after error' AS still")
    s.q(c, f"INSERT INTO {t} VALUES (1, 1); INSERT INTO {t} VALUES (1, 1); SELECT 'not reached'")
    s.q(c, f"SELECT COUNT(*) FROM {t}")
    s.q(c, "BEGIN; SELECT 1; COMMIT")
    s.q(c, "SET @a = 1; SET @b = 2; SELECT @a + @b AS sum")
    s.q(c, "SELECT 1 AS x;")
    s.q(c, "DO 1; DO 2")
    # without CLIENT_MULTI_STATEMENTS
    c2 = s.connect(multi=False)
    s.q(c2, "SELECT 1; SELECT 2")
    s.q(c2, "SELECT 'single' AS ok")


@scenario("multi_statements_ro", modes=("ro",))
def multi_statements_ro(s):
    c = s.connect()
    s.q(c, "SELECT 1 AS a; SELECT id, c FROM t_types ORDER BY id; SET @x = 5; SELECT @x AS x")
    s.q(c, "SELECT COUNT(*) FROM t_types; SELECT * FROM nope_ro; SELECT 3")
    s.q(c, "SELECT 'after error' AS still")
    # A batch that holds anything but reads and session statements is refused on a read-only
    # endpoint (it may write); this one holds only those.
    s.q(c, "SELECT 0 AS first; SET @a = 1; SET @b = 2; SELECT @a + @b AS sum")
    c2 = s.connect(multi=False)
    s.q(c2, "SELECT 1; SELECT 2")
    s.q(c2, "SELECT 'single' AS ok")


# ---------------------------------------------------------------------------------------------
# 5. stored procedures


@scenario("procedures", modes=WRITES)
def procedures(s):
    c = s.connect()
    s.q(c, "CALL p_multi()")
    out("-- cursor.callproc('p_multi')")
    cur = c.cursor()
    try:
        out(f"   -> {R(cur.callproc('p_multi'))}")
        while True:
            s.result(c, cur)
            if not cur.nextset():
                break
    except Exception as e:
        s.handle(e, c)
    out("-- cursor.callproc('p_out', (21, None, 'in'))")
    cur = c.cursor()
    try:
        out(f"   -> {R(cur.callproc('p_out', (21, None, 'in')))}")
        while True:
            s.result(c, cur)
            if not cur.nextset():
                break
    except Exception as e:
        s.handle(e, c)
    s.q(c, "SELECT @_p_out_0, @_p_out_1, @_p_out_2")
    s.q(c, "SET @b = NULL, @c = 'sql'")
    s.q(c, "CALL p_out(5, @b, @c)")
    s.q(c, "SELECT @b, @c")
    s.q(c, "PREPARE pc FROM 'CALL p_out(?, ?, ?)'")
    s.q(c, "SET @c = 'prep'")
    s.q(c, "EXECUTE pc USING 7, @b, @c")
    s.q(c, "SELECT @b, @c")
    s.q(c, "DEALLOCATE PREPARE pc")
    c2 = s.connect(multi=False)
    out("-- (a connection without CLIENT_MULTI_STATEMENTS: CALL still returns several results)")
    s.q(c2, "CALL p_multi()")
    s.q(c, "CALL p_nope()")
    s.q(c, "CALL p_out(1)")
    s.q(c, "SELECT 'alive' AS after_errors")


def cursor_call(s, label, stmts):
    """One fresh connection per CALL: a hang (known bug) breaks only that one."""
    out(f"-- ({label}: new connection, read timeout {CURSOR_TIMEOUT}s)")
    try:
        c = s.connect(timeout=CURSOR_TIMEOUT)
        for sql in stmts:
            s.q(c, sql)
    except Broken:
        out("   (connection broken)")


@scenario("procedures_cursor", modes=WRITES)
def procedures_cursor(s):
    cursor_call(s, "p_cursor, text", ["CALL p_cursor()", "SELECT 'after' AS a"])
    cursor_call(s, "p_cursor, SQL PREPARE", [
        "PREPARE pc FROM 'CALL p_cursor()'", "EXECUTE pc", "EXECUTE pc", "DEALLOCATE PREPARE pc",
        "SELECT 'after' AS a"])
    cursor_call(s, "p_cursor_loop, text", [
        "SET @t = NULL, @l = NULL", "CALL p_cursor_loop(@t, @l)", "SELECT @t, @l"])
    cursor_call(s, "p_cursor_loop, SQL PREPARE", [
        "SET @t = NULL, @l = NULL", "PREPARE pl FROM 'CALL p_cursor_loop(?, ?)'",
        "EXECUTE pl USING @t, @l", "SELECT @t, @l", "DEALLOCATE PREPARE pl"])

    out("-- (p_cursor_loop, cursor.callproc: new connection)")
    try:
        c = s.connect(timeout=CURSOR_TIMEOUT)
        cur = c.cursor()
        out("-- cursor.callproc('p_cursor_loop', (None, None))")
        try:
            out(f"   -> {R(cur.callproc('p_cursor_loop', (None, None)))}")
            while True:
                s.result(c, cur)
                if not cur.nextset():
                    break
        except Exception as e:
            s.handle(e, c)
        s.q(c, "SELECT @_p_cursor_loop_0, @_p_cursor_loop_1")
    except Broken:
        out("   (connection broken)")


# ---------------------------------------------------------------------------------------------
# 6. user and session variables


@scenario("variables")
def variables(s):
    c = s.connect()
    s.q(c, "SET @i = 1, @s = 'x', @d = 1.50, @f = 1e3, @n = NULL, @b = X'00FF', @neg = -9223372036854775808")
    s.q(c, "SELECT @i, @s, @d, @f, @n, @b, @neg, @unset")
    s.q(c, "SELECT @r := 5 AS r, @r + 1 AS r1")
    s.q(c, "SET SESSION sql_mode = 'ANSI_QUOTES,STRICT_ALL_TABLES,NO_ZERO_DATE'")
    s.q(c, "SELECT @@SESSION.sql_mode")
    s.q(c, 'SELECT "ident" FROM t_proc')
    s.q(c, "SET SESSION sql_mode = DEFAULT")
    s.q(c, 'SELECT "now a string" AS s')
    s.q(c, "SET time_zone = '+05:30'")
    s.q(c, "SELECT @@session.time_zone, FROM_UNIXTIME(0) AS epoch, "
           "CONVERT_TZ('2024-01-01 00:00:00', '+00:00', @@session.time_zone) AS conv")
    s.q(c, "SET time_zone = '+00:00'")
    s.q(c, "SELECT id, ts, ts6 FROM t_types WHERE id IN (1, 2, 3) ORDER BY id")
    s.q(c, "SET time_zone = '-08:00'")
    s.q(c, "SELECT id, ts, ts6, UNIX_TIMESTAMP(ts) FROM t_types WHERE id IN (1, 2, 3) ORDER BY id")
    s.q(c, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    s.q(c, "SELECT @@session.tx_isolation")
    s.q(c, "SET SESSION group_concat_max_len = 7, div_precision_increment = 8")
    s.q(c, "SELECT @@group_concat_max_len, @@div_precision_increment, GROUP_CONCAT(s ORDER BY id) AS g, 1/3 AS third FROM t_proc")
    s.q(c, "SET @@session.autocommit = 1, @@session.sql_select_limit = 2")
    s.q(c, "SELECT id FROM t_types ORDER BY id")
    s.q(c, "SET sql_select_limit = DEFAULT")
    s.q(c, "SET SESSION nope_variable = 1")
    s.q(c, "SELECT @@session.nope_variable")


# ---------------------------------------------------------------------------------------------
# 7. character sets

CS_TEXT = "héllo wörld ✓ 😀 ça ß 漢字"


@scenario("charsets")
def charsets(s):
    vars_sql = ("SELECT @@character_set_client, @@character_set_connection, "
                "@@character_set_results, @@collation_connection")
    mysqldb = s.drv.name == "mysqldb"

    def driver_charset(c):
        if mysqldb:
            s.call(c, "conn.character_set_name()", c.character_set_name)
        else:
            s.call(c, "conn.charset, conn.encoding", lambda: (c.charset, c.encoding))

    def utf8mb4():
        c = s.connect()
        s.q(c, vars_sql)
        driver_charset(c)
        s.q(c, "SELECT %s AS lit, CHAR_LENGTH(%s) AS chars, LENGTH(%s) AS bytes, HEX(%s) AS hex",
            (CS_TEXT,) * 4, label="SELECT %s (utf8mb4 text, emoji, accents), CHAR_LENGTH, LENGTH, HEX")
        s.q(c, "SELECT id, vc, tx, HEX(vc) FROM t_types WHERE id = 3")
        s.q(c, "SELECT _latin1 X'E9' AS latin1_e, CONVERT(_utf8mb4 'é' USING latin1) AS conv, "
               "'😀' COLLATE utf8mb4_bin AS emoji, HEX(CONVERT('😀' USING utf16)) AS utf16")
        if RW:
            t = tname(s, "t_cs")
            s.q(c, f"DROP TABLE IF EXISTS {t}")
            s.q(c, f"CREATE TABLE {t} (id INT PRIMARY KEY, u VARCHAR(50) CHARACTER SET utf8mb4, "
                   f"l VARCHAR(50) CHARACTER SET latin1)")
            s.q(c, f"INSERT INTO {t} VALUES (1, %s, %s)", (CS_TEXT, "café"),
                label=f"INSERT INTO {t} VALUES (1, utf8mb4 text, 'café')")
            s.q(c, f"INSERT INTO {t} VALUES (2, %s, %s)", (CS_TEXT, CS_TEXT),
                label=f"INSERT INTO {t} VALUES (2, utf8mb4 text, utf8mb4 text into latin1)")
            s.q(c, "SHOW WARNINGS")
        s.q(c, "SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci")
        s.q(c, vars_sql)
        s.q(c, "SELECT id, vc FROM t_types WHERE id = 3")
        s.q(c, "SELECT 'a' = 'A' AS ci, 'é' = 'e' AS accent_eq")
    s.part("utf8mb4 connection", utf8mb4)

    def set_names():
        # the server switches to latin1; the driver still decodes with its own charset
        c = s.connect()
        s.q(c, "SET NAMES latin1")
        s.q(c, vars_sql)
        driver_charset(c)
        s.q(c, "SELECT HEX(vc), HEX(_utf8mb4'é') FROM t_types WHERE id = 3")
        s.q(c, "SELECT id, vc FROM t_types WHERE id = 3")
    s.part("utf8mb4 connection, SET NAMES latin1 as SQL", set_names)

    def api_charset():
        c = s.connect()
        if mysqldb:
            s.call(c, "conn.set_character_set('latin1')", lambda: c.set_character_set("latin1"))
        else:
            s.call(c, "conn.set_charset('latin1')", lambda: c.set_charset("latin1"))
        s.q(c, vars_sql)
        driver_charset(c)
        s.q(c, "SELECT id, vc FROM t_types WHERE id = 3")
        s.q(c, "SELECT %s AS lit, HEX(%s) AS hex", ("café",) * 2, label="SELECT 'café' AS lit, HEX('café')")
    s.part("the driver's API switches to latin1", api_charset)

    def latin1():
        c = s.connect(charset="latin1")
        s.q(c, vars_sql)
        driver_charset(c)
        s.q(c, "SELECT id, vc, tx FROM t_types WHERE id = 3")
        s.q(c, "SELECT %s AS lit, HEX(%s) AS hex", ("café",) * 2, label="SELECT 'café' AS lit, HEX('café')")
        if RW:
            s.q(c, f"SELECT id, u, l FROM {tname(s, 't_cs')} ORDER BY id")
    s.part("connect with charset='latin1'", latin1)

    def utf8():
        c = s.connect(charset="utf8")
        s.q(c, vars_sql)
        driver_charset(c)
        s.q(c, "SELECT id, vc FROM t_types WHERE id = 3")
    s.part("connect with charset='utf8'", utf8)


# ---------------------------------------------------------------------------------------------
# 8. errors, then continue on the same connection


@scenario("errors")
def errors(s):
    c = s.connect()
    # sluice refuses a statement it cannot classify on a read-only endpoint (error 1290: it may
    # be a write); a syntax error inside a SELECT reaches the replica like any read.
    s.q(c, "SELEC 1" if RW else "SELECT 1 FROM WHERE")
    s.q(c, "SELECT 'alive 1'")
    s.q(c, "SELECT * FROM nope_table")
    s.q(c, "SELECT 'alive 2'")
    s.q(c, "SELECT nope_column FROM t_types")
    s.q(c, "SELECT 'alive 3'")
    s.q(c, "SELECT * FROM information_schema.nope")
    if RW:
        s.q(c, "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom signal', MYSQL_ERRNO = 1644")
    s.q(c, "SELECT 1/0 AS div0, CAST('abc' AS INT) AS bad_int")
    s.q(c, "SHOW WARNINGS")
    s.q(c, "SELECT JSON_EXTRACT('not json', '$') AS bad_json")
    s.q(c, "SHOW WARNINGS")
    s.q(c, "USE nope_db")
    s.q(c, "SELECT DATABASE()")
    s.q(c, "SELECT %s", ("a", "b"), label="SELECT %s with two params (driver-side error)",
        client_side=True)
    s.q(c, "SELECT 'alive 4'")
    if RW:
        t = tname(s, "t_err")
        s.q(c, f"DROP TABLE IF EXISTS {t}")
        s.q(c, f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(3) NOT NULL)")
        s.q(c, f"INSERT INTO {t} VALUES (1, 'a')")
        s.q(c, f"INSERT INTO {t} VALUES (1, 'b')")
        s.q(c, "SELECT 'alive 5'")
        s.q(c, f"INSERT INTO {t} VALUES (2, 'toolong')")
        s.q(c, f"INSERT INTO {t} VALUES (3, NULL)")
        s.q(c, f"CREATE TABLE {t} (id INT)")
        s.q(c, "BEGIN")
        s.q(c, f"INSERT INTO {t} VALUES (4, 'in')")
        s.q(c, f"INSERT INTO {t} VALUES (4, 'dup')")
        s.q(c, "COMMIT")
        s.q(c, f"SELECT * FROM {t} ORDER BY id")
    s.q(c, "KILL QUERY 0")
    s.q(c, "SELECT 'alive 6'")
    s.part("connect to database 'nope_db'", lambda: s.connect(db="nope_db"))
    s.part("connect with a wrong password", lambda: s.connect(password="wrong"))
    s.part("connect as an unknown user", lambda: s.connect(user="nope_user"))


# ---------------------------------------------------------------------------------------------
# 9. big values (>= 16 MiB)


def big_blob():
    return (bytes(range(256)) * (BIG // 256 + 1))[:BIG]


def big_text():
    # 9 bytes in utf8mb4 for 5 characters: 17 MiB and a little more once encoded
    return "é😀abc" * (BIG // 9 + 1)


def show_big(s, c, sql, meta=False):
    out(f"-- {short(sql)}")
    cur = c.cursor()
    try:
        cur.execute(sql)
        out("   columns: " + ", ".join(
            f"{d[0]}:{s.drv.types.get(d[1], d[1])}" for d in cur.description))
        for r in cur.fetchall():
            out(f"   row: {R(tuple(r))}")
    except Exception as e:
        s.handle(e, c)


@scenario("big_values")
def big_values(s):
    c = s.connect()
    blob, text = big_blob(), big_text()
    out(f"   client blob: len={len(blob)} sha256={sha(blob)}")
    out(f"   client text: chars={len(text)} bytes={len(text.encode())} sha256={sha(text.encode())}")
    me = 1 if s.drv.name == "pymysql" else 2
    if RW:
        s.q(c, "DELETE FROM t_big WHERE id = %s", (me,), label=f"DELETE FROM t_big WHERE id = {me}")
        s.q(c, "INSERT INTO t_big VALUES (%s, %s, %s)", (me, blob, text),
            label=f"INSERT INTO t_big VALUES ({me}, 17 MiB blob, 17 MiB text)")
        s.q(c, "UPDATE t_big SET lt = CONCAT(lt, 'x') WHERE id = %s", (me,),
            label=f"UPDATE t_big SET lt = CONCAT(lt, 'x') WHERE id = {me}")
    show_big(s, c, "SELECT id, LENGTH(lb), SHA2(lb, 256) = SHA2(lb, 256), CHAR_LENGTH(lt), LENGTH(lt), "
                   "LEFT(SHA2(lb, 256), 16), LEFT(SHA2(lt, 256), 16) FROM t_big ORDER BY id")
    show_big(s, c, "SELECT id, lb, lt FROM t_big ORDER BY id")
    show_big(s, c, f"SELECT REPEAT('x', {BIG}) AS r, LENGTH(REPEAT('y', {BIG})) AS n")
    show_big(s, c, f"SELECT REPEAT('x', 50 * 1024 * 1024) AS too_big")
    s.q(c, "SHOW WARNINGS")
    s.q(c, "SELECT 'alive' AS after_big")
    # the same through PREPARE/EXECUTE (text protocol results)
    s.q(c, "PREPARE pb FROM 'SELECT id, lb FROM t_big WHERE id = ?'")
    show_big(s, c, "EXECUTE pb USING 1")
    s.q(c, "DEALLOCATE PREPARE pb")


# ---------------------------------------------------------------------------------------------
# 10. LOAD DATA LOCAL INFILE


@scenario("load_data", modes=WRITES)
def load_data(s):
    t = tname(s, "t_load")
    path = os.path.join(WORK, f"load_{s.drv.name}.csv")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("1,alpha,1.5\n2,béta 😀,\\N\n3,\"quoted, comma\",3\n4,extra,4,too many\n5,short\n")
    path2 = os.path.join(WORK, f"load_{s.drv.name}_2.csv")
    with open(path2, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(f"{i},replaced {i},{i}.5\n" for i in range(1, 8)))
    c = s.connect()
    s.q(c, f"DROP TABLE IF EXISTS {t}")
    s.q(c, f"CREATE TABLE {t} (id INT PRIMARY KEY, s VARCHAR(20), d DECIMAL(4,1)) DEFAULT CHARSET=utf8mb4")
    load = (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {t} CHARACTER SET utf8mb4 "
            f"FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n'")
    s.q(c, load, label=f"LOAD DATA LOCAL INFILE '$CB_WORK/load_{s.drv.name}.csv' INTO TABLE {t} ...")
    s.q(c, "SHOW WARNINGS")
    s.q(c, f"SELECT * FROM {t} ORDER BY id")
    s.q(c, load + " IGNORE 3 LINES", label="the same file again, IGNORE 3 LINES (duplicate keys)")
    s.q(c, load.replace("INTO TABLE", "REPLACE INTO TABLE").replace(path, path2),
        label=f"LOAD DATA LOCAL INFILE '$CB_WORK/load_{s.drv.name}_2.csv' REPLACE INTO TABLE {t} ...")
    s.q(c, f"SELECT * FROM {t} ORDER BY id")
    missing = os.path.join(WORK, "missing.csv")
    s.q(c, f"LOAD DATA LOCAL INFILE '{missing}' INTO TABLE {t}",
        label="LOAD DATA LOCAL INFILE '$CB_WORK/missing.csv' (no such file)")
    s.q(c, "SELECT 'alive' AS after_load")
    s.q(c, f"SELECT COUNT(*) FROM {t}")


@scenario("load_data_ro", modes=("ro",))
def load_data_ro(s):
    c = s.connect()
    s.q(c, f"SELECT * FROM {tname(s, 't_load')} ORDER BY id")


# ---------------------------------------------------------------------------------------------
# 11. reconnect, change user, reset connection, ping, select_db


def session_state(s, c):
    s.q(c, "SELECT @u AS user_var, DATABASE() AS db, CURRENT_USER() AS cur_user, @@session.time_zone AS tz")
    if RW:
        s.q(c, "SELECT COUNT(*) AS tmp_rows FROM tmp_state")


def make_state(s, c):
    s.q(c, "SET @u = 42, time_zone = '+03:00'")
    if RW:
        s.q(c, "CREATE TEMPORARY TABLE tmp_state (id INT)")
        s.q(c, "INSERT INTO tmp_state VALUES (1), (2)")
    session_state(s, c)


@scenario("reconnect_change_user_reset")
def reconnect(s):
    c = s.connect()
    make_state(s, c)
    out("-- close, connect again")
    c.close()
    c = s.connect()
    session_state(s, c)

    if s.drv.name == "pymysql":
        make_state(s, c)
        s.call(c, "conn.ping(reconnect=False)", lambda: c.ping(reconnect=False))
        session_state(s, c)
        out("-- conn.close(); conn.ping(reconnect=True)")
        c.close()
        try:
            c.ping(reconnect=True)
            out("   -> reconnected")
        except Exception as e:
            s.handle(e, c)
        session_state(s, c)
        s.call(c, "conn.select_db('information_schema')", lambda: c.select_db("information_schema"))
        s.q(c, "SELECT DATABASE()")
        s.call(c, "conn.select_db('nope_db')", lambda: c.select_db("nope_db"))
        s.call(c, f"conn.select_db({DB!r})", lambda: c.select_db(DB))
        s.q(c, "SELECT DATABASE()")
        out("-- change user: PyMySQL 1.0.2 has no change_user()")
        # PyMySQL has no API for COM_RESET_CONNECTION: send the raw command through its packet
        # layer (0x1f), as an application could.
        make_state(s, c)

        def reset():
            c._execute_command(0x1F, b"")
            ok = c._read_ok_packet()
            return (ok.affected_rows, ok.insert_id, ok.warning_count, ok.message)
        s.call(c, "COM_RESET_CONNECTION (raw command through PyMySQL's packet layer)", reset)
        session_state(s, c)
        s.q(c, "SELECT @@character_set_client, @@character_set_results, @@autocommit")
    else:
        make_state(s, c)
        s.call(c, "conn.ping()", c.ping)
        session_state(s, c)
        s.call(c, "conn.select_db('information_schema')", lambda: c.select_db("information_schema"))
        s.q(c, "SELECT DATABASE()")
        s.call(c, "conn.select_db('nope_db')", lambda: c.select_db("nope_db"))
        s.call(c, f"conn.select_db({DB!r})", lambda: c.select_db(DB))
        make_state(s, c)
        s.call(c, f"conn.change_user(CB_USER2, ..., {DB!r})", lambda: c.change_user(USER2, PASSWORD2, DB))
        session_state(s, c)
        s.q(c, "SELECT @@character_set_client, @@character_set_results, @@autocommit")
        s.q(c, "SELECT COUNT(*) FROM t_types")
        s.q(c, "SELECT COUNT(*) FROM mysql.user")
        s.call(c, "conn.change_user(CB_USER2, 'wrong', ...)", lambda: c.change_user(USER2, "wrong", DB))
        try:
            s.q(c, "SELECT CURRENT_USER() AS after_failed_change_user")
        except Broken:
            c = s.connect()
        s.call(c, "conn.change_user(CB_USER, ..., None)", lambda: c.change_user(USER, PASSWORD))
        session_state(s, c)
        out("-- reset connection: mysqlclient 1.4.6 has no reset_connection()")
    out("-- connect as CB_USER2")
    c2 = s.connect(user=USER2, password=PASSWORD2)
    s.q(c2, "SELECT CURRENT_USER(), DATABASE()")
    s.q(c2, "SELECT COUNT(*) FROM t_types")


# ---------------------------------------------------------------------------------------------
# extra: unbuffered (streaming) cursors


@scenario("unbuffered_cursor")
def unbuffered(s):
    c = s.connect()
    SS = s.drv.unbuffered()
    out(f"-- {SS.__name__}: SELECT seq FROM seq_1_to_100000, iterated")
    cur = c.cursor(SS)
    try:
        cur.execute("SELECT seq, CONCAT('row', seq) AS s FROM seq_1_to_100000")
        n = tot = 0
        first = last = None
        for row in cur:
            n += 1
            tot += row[0]
            first = first or row
            last = row
        out(f"   rows={n} sum={tot} first={R(first)} last={R(last)}")
        cur.close()
    except Exception as e:
        s.handle(e, c)
    out(f"-- {SS.__name__}: fetchmany(3) of a 1000-row result, then abandon it")
    cur = c.cursor(SS)
    try:
        cur.execute("SELECT seq FROM seq_1_to_1000")
        out(f"   {R(cur.fetchmany(3))}")
        out(f"   {R(cur.fetchone())}")
        cur.close()
    except Exception as e:
        s.handle(e, c)
    s.q(c, "SELECT 'after abandoned' AS a")
    s.q(c, f"SELECT {TYPE_COLS} FROM t_types ORDER BY id", cursorclass=SS)
    s.q(c, "SELECT 1; SELECT 2 AS two", cursorclass=SS)
    s.q(c, "SELECT * FROM nope_ss", cursorclass=SS)
    out(f"-- {SS.__name__}: the 17 MiB rows of t_big")
    cur = c.cursor(SS)
    try:
        cur.execute("SELECT id, lb FROM t_big ORDER BY id")
        for row in cur:
            out(f"   row: {R(tuple(row))}")
        cur.close()
    except Exception as e:
        s.handle(e, c)
    s.q(c, "SELECT 'alive' AS end_unbuffered")


# ---------------------------------------------------------------------------------------------


def own_errors():
    """CB_MODE=errors: an error sluice raises itself (scripts/client-batteries.sh's errors
    phase). Each driver connects and runs CB_SQL, and prints one line: 'DRIVER: ok' or
    'DRIVER: error CODE STATE MESSAGE' (STATE '?' when the driver does not expose it), the
    login's error included."""
    sql = os.environ["CB_SQL"]
    for drv in (PyMySQL(), MySQLdbDriver()):
        conn = None
        try:
            conn = drv.connect()
            cur = conn.cursor()
            cur.execute(sql)
            cur.fetchall()
            out(f"{drv.name}: ok")
        except drv.Error as e:
            code, state, msg = drv.describe_error(e, conn)
            out(f"{drv.name}: error {code} {state or '?'} {stable(msg)}")
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass


# ---------------------------------------------------------------- CB_MODE=isolation
# Client A sets every kind of session state (with the driver's API where it has one) and goes
# idle or leaves; client B opens and prints what it sees (the server's defaults, its own); A
# prints its own state again. Directly two server connections; through sluice at pool
# max_per_node 1 one node connection (scripts/client-isolation.sh). Neither driver prepares on
# the server: SQL PREPARE stands for prepared statements (it pins, so in the leave round only).

ISO_PROBE = ("SELECT DATABASE() AS db, @@session.sql_mode AS sql_mode, "
             "@@session.max_statement_time AS max_statement_time, @@character_set_client AS cs_client, "
             "@@character_set_connection AS cs_connection, @@character_set_results AS cs_results, "
             "@@collation_connection AS collation, @@session.tx_isolation AS isolation, "
             "@@session.time_zone AS time_zone, @@autocommit AS autocommit, @@in_transaction AS in_tx, "
             "@cb_iso_s AS uv_s, @cb_iso_n AS uv_n, LAST_INSERT_ID() AS last_id")


def iso_value(v):
    if isinstance(v, (bytes, bytearray)):
        v = bytes(v).decode("utf-8", "replace")
    if isinstance(v, decimal.Decimal):
        v = format(v.normalize(), "f") if v == v.to_integral() else str(v)
    return "NULL" if v is None else str(v)


def iso_connect(drv, db):
    if db is None and isinstance(drv, MySQLdbDriver):
        return MySQLdb.connect(host=HOST, port=PORT, user=USER, password=PASSWORD, charset="utf8mb4",
                               connect_timeout=10, read_timeout=TIMEOUT, write_timeout=TIMEOUT,
                               autocommit=True)
    return drv.connect(db=db, multi=False)


def iso_q(drv, conn, sql):
    """Runs sql and prints its rows (name=value a line), or its error."""
    try:
        cur = conn.cursor()
        cur.execute(sql)
        if cur.description:
            names = [d[0] for d in cur.description]
            for row in cur.fetchall():
                for n, v in zip(names, row):
                    out(f"  {n}={iso_value(v)}")
        else:
            out(f"  ok affected={cur.rowcount}")
        cur.close()
    except drv.Error as e:
        code, state, msg = drv.describe_error(e, conn)
        out(f"  error {code} {state} {stable(msg)}")


def iso_step(label, fn):
    out(f"-- {label}")
    try:
        fn()
    except Exception as e:
        out(f"  exception: {type(e).__name__}: {stable(e)}")


def iso_charset(conn, cs):
    if isinstance(conn, pymysql.connections.Connection):
        conn.set_charset(cs)
    else:
        conn.set_character_set(cs)


def iso_set(drv, a):
    def state():
        a.select_db(DB)
        iso_charset(a, "latin1")
        iso_q(drv, a, "SET SESSION sql_mode = 'ANSI_QUOTES,NO_ZERO_DATE', max_statement_time = 7")
        iso_q(drv, a, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        iso_q(drv, a, "SET time_zone = '+03:00'")
        iso_q(drv, a, "SET @cb_iso_s = 'A-string', @cb_iso_n = 42")
    iso_step("A sets database, charset, session variables, isolation, time zone, user variables", state)

    def insert():
        a.autocommit(False)
        iso_q(drv, a, "INSERT INTO cb_iso_t (v) VALUES ('A')")
        out(f"  insert id {a.insert_id()}")
        a.commit()
    iso_step("A autocommit off, an insert (LAST_INSERT_ID), commit", insert)


def iso_idle(drv):
    out(f"== {drv.name} isolation idle")
    a = iso_connect(drv, None)
    iso_set(drv, a)
    iso_step("A probe", lambda: iso_q(drv, a, ISO_PROBE))
    a.commit()
    b = iso_connect(drv, None)
    iso_step("B probe (defaults)", lambda: iso_q(drv, b, ISO_PROBE))
    iso_step("B warnings", lambda: iso_q(drv, b, "SHOW WARNINGS"))

    def own():
        iso_q(drv, b, "SET time_zone = '-02:00', sql_mode = ''")
        iso_q(drv, b, "SET @cb_iso_s = 'B-string'")
        iso_q(drv, b, ISO_PROBE)
    iso_step("B sets its own", own)
    iso_step("A probe again", lambda: iso_q(drv, a, ISO_PROBE))
    iso_step("A reads its table", lambda: iso_q(drv, a, "SELECT v FROM cb_iso_t ORDER BY id"))
    a.commit()
    b.close()
    a.close()


def iso_leave(drv):
    out(f"== {drv.name} isolation leave")
    a = iso_connect(drv, None)
    iso_set(drv, a)

    def pins():
        iso_q(drv, a, "CREATE TEMPORARY TABLE cb_iso_tmp (a INT)")
        iso_q(drv, a, "INSERT INTO cb_iso_tmp VALUES (1)")
        iso_q(drv, a, "SELECT GET_LOCK('cb_iso_lock', 0) AS got")
        iso_q(drv, a, "PREPARE cb_iso_p FROM 'SELECT 1 AS one'")
    iso_step("A pins: temporary table, GET_LOCK, SQL PREPARE", pins)

    def tx():
        a.autocommit(True)
        a.begin()
        iso_q(drv, a, "INSERT INTO cb_iso_t (v) VALUES ('A-uncommitted')")
        iso_q(drv, a, "SELECT CAST('1x' AS SIGNED) AS w")
        iso_q(drv, a, "SHOW WARNINGS")
        iso_q(drv, a, ISO_PROBE)
    iso_step("A opens a transaction, inserts, warns", tx)
    a.close()
    b = iso_connect(drv, None)
    iso_step("B warnings", lambda: iso_q(drv, b, "SHOW WARNINGS"))
    iso_step("B probe (defaults)", lambda: iso_q(drv, b, ISO_PROBE))
    iso_step("B reads A's temporary table", lambda: iso_q(drv, b, f"SELECT a FROM {DB}.cb_iso_tmp"))

    def lock():
        iso_q(drv, b, "SELECT GET_LOCK('cb_iso_lock', 10) AS got")
        iso_q(drv, b, "SELECT RELEASE_LOCK('cb_iso_lock') AS released")
    iso_step("B takes A's lock", lock)
    iso_step("B executes A's SQL prepared statement", lambda: iso_q(drv, b, "EXECUTE cb_iso_p"))
    iso_step("B reads A's uncommitted row",
             lambda: iso_q(drv, b, f"SELECT COUNT(*) AS n FROM {DB}.cb_iso_t WHERE v = 'A-uncommitted'"))
    b.close()


def iso_locked(drv):
    out(f"== {drv.name} isolation locked")
    a = iso_connect(drv, DB)

    def locked():
        iso_q(drv, a, "LOCK TABLES cb_iso_t WRITE")
        iso_q(drv, a, "INSERT INTO cb_iso_t (v) VALUES ('A-locked')")
    iso_step("A LOCK TABLES, insert", locked)
    a.close()
    b = iso_connect(drv, DB)

    def write():
        iso_q(drv, b, "SET SESSION lock_wait_timeout = 10")
        iso_q(drv, b, "INSERT INTO cb_iso_t (v) VALUES ('B-after-lock')")
        iso_q(drv, b, "SELECT v FROM cb_iso_t ORDER BY id")
    iso_step("B writes the table", write)
    b.close()


def isolation():
    rounds = (os.environ.get("CB_ROUNDS") or "idle leave locked").replace(",", " ").split()
    out(f"# python isolation; PyMySQL {pymysql.__version__}, "
        f"mysqlclient {'.'.join(map(str, MySQLdb.version_info[:3]))}")
    for drv in (PyMySQL(), MySQLdbDriver()):
        # Quiet: whether the table existed before differs between runs (a note).
        c = drv.connect(multi=False)
        cur = c.cursor()
        cur.execute("DROP TABLE IF EXISTS cb_iso_t")
        cur.execute("CREATE TABLE cb_iso_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))")
        c.close()
        for r in rounds:
            {"idle": iso_idle, "leave": iso_leave, "locked": iso_locked}[r](drv)
    out("# end")


def main():
    if MODE == "errors":
        own_errors()
        return
    if MODE == "isolation":
        isolation()
        return
    drivers = [PyMySQL(), MySQLdbDriver()]
    # cannot run at all: no connection, directly or through the proxy
    try:
        drivers[0].connect().close()
    except Exception as e:
        sys.exit(f"battery: cannot connect to {HOST}:{PORT}: {e}")
    out(f"# python battery, mode {MODE}; PyMySQL {pymysql.__version__}, "
        f"mysqlclient {'.'.join(map(str, MySQLdb.version_info[:3]))}")
    if RW:
        try:
            setup()
        except Exception as e:
            out(f"   ! setup failed: {type(e).__name__}: {stable(e)}")
    for drv in drivers:
        for name, modes, fn in SCENARIOS:
            if MODE not in modes:
                continue
            out(f"== {drv.name}: {name}")
            s = Session(drv)
            try:
                fn(s)
            except Broken:
                out("   (connection broken: scenario stopped)")
            except Exception as e:
                out(f"   !! unexpected {type(e).__name__}: {stable(e)}")
                traceback.print_exc(file=sys.stderr)
            finally:
                s.close_all()
    out("# end")


if __name__ == "__main__":
    main()
