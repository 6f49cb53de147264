'use strict';
// sluice client battery for Node.js mysql2 (see README.md and ../README.md for the contract).
//
// Everything goes through mysql2's callback API, wrapped once (call()) into promises with a
// guard timer, so that a hang becomes a printed error. Every query/execute also carries
// mysql2's own `timeout` option. A statement whose error leaves the connection unusable
// (fatal error, timeout) ends its scenario; the next scenario opens a new connection.

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const mysql = require('mysql2');

const env = (k, d) => {
  const v = process.env[k];
  if (v === undefined || v === '') {
    if (d !== undefined) return d;
    process.stderr.write(`battery: ${k} is not set\n`);
    process.exit(2);
  }
  return v;
};

const HOST = env('CB_HOST');
const PORT = Number(env('CB_PORT'));
const USER = env('CB_USER');
const PASSWORD = env('CB_PASSWORD', '');
const USER2 = env('CB_USER2');
const PASSWORD2 = env('CB_PASSWORD2', '');
const DB = env('CB_DB');
const MODE = env('CB_MODE');
const WORK = env('CB_WORK');
const TIMEOUT = Number(process.env.CB_TIMEOUT_MS || 20000);
const RW = MODE === 'rw';

if (HOST !== '127.0.0.1' && HOST !== 'localhost') {
  process.stderr.write(`battery: refusing to connect to ${HOST}\n`);
  process.exit(2);
}
if (!['rw', 'ro', 'errors', 'isolation'].includes(MODE)) {
  process.stderr.write(`battery: CB_MODE must be rw, ro, errors or isolation, not ${MODE}\n`);
  process.exit(2);
}

const BIG = 17 * 1024 * 1024;

// ---------------------------------------------------------------- output

const out = [];
function p(...parts) {
  let s = parts.join(' ');
  // the scratch directory's path is the same for both runs of one suite, but not across suites
  if (WORK) s = s.split(WORK).join('$CB_WORK');
  out.push(s);
  if (out.length >= 200) flush();
}
function flush() {
  if (out.length) {
    process.stdout.write(out.join('\n') + '\n');
    out.length = 0;
  }
}

const sha = (b) => crypto.createHash('sha256').update(b).digest('hex').slice(0, 16);

function val(v) {
  if (v === null) return 'NULL';
  if (v === undefined) return 'undefined';
  if (Buffer.isBuffer(v)) {
    if (v.length > 64) return `Buffer(${v.length}) sha256:${sha(v)}`;
    return `Buffer(${v.length}) 0x${v.toString('hex')}`;
  }
  if (v instanceof Date) {
    return `Date ${isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString()}`;
  }
  const t = typeof v;
  if (t === 'string') {
    if (v.length > 200) return `string(${v.length}) sha256:${sha(Buffer.from(v, 'utf8'))}`;
    return `string ${JSON.stringify(v)}`;
  }
  if (t === 'number') return `number ${Object.is(v, -0) ? '-0' : String(v)}`;
  if (t === 'bigint') return `bigint ${v}n`;
  if (t === 'boolean') return `boolean ${v}`;
  if (t === 'object') {
    let s;
    try {
      s = JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `${x}n` : x));
    } catch (e) {
      s = `<unserializable ${e.message}>`;
    }
    const ctor = Array.isArray(v) ? 'array' : 'object';
    return `${ctor} ${s}`;
  }
  return `${t} ${String(v)}`;
}

const FLAG_NAMES = [
  [1, 'NOT_NULL'], [2, 'PRI'], [4, 'UNIQUE'], [8, 'MULTIPLE'], [16, 'BLOB'], [32, 'UNSIGNED'],
  [64, 'ZEROFILL'], [128, 'BINARY'], [256, 'ENUM'], [512, 'AUTO_INC'], [1024, 'TIMESTAMP'],
  [2048, 'SET'], [4096, 'NO_DEFAULT'], [8192, 'ON_UPDATE_NOW'], [32768, 'NUM'],
];
const flagStr = (f) => FLAG_NAMES.filter(([b]) => f & b).map(([, n]) => n).join(',') || '-';

function fieldStr(f) {
  const parts = [
    `name=${JSON.stringify(f.name)}`,
    `orgName=${JSON.stringify(f.orgName)}`,
    `table=${JSON.stringify(f.table)}`,
    `orgTable=${JSON.stringify(f.orgTable)}`,
    `db=${JSON.stringify(f.schema)}`,
    `type=${mysql.Types[f.columnType] || '?'}(${f.columnType})`,
    `len=${f.columnLength}`,
    `charset=${f.characterSet}`,
    `flags=${flagStr(f.flags)}`,
    `decimals=${f.decimals}`,
  ];
  if (f.extendedTypeName !== undefined) parts.push(`extType=${f.extendedTypeName}`);
  if (f.extendedFormat !== undefined) parts.push(`extFormat=${f.extendedFormat}`);
  return parts.join(' ');
}

const STATUS = [
  [0x0001, 'IN_TRANS'], [0x0002, 'AUTOCOMMIT'], [0x0008, 'MORE_RESULTS'], [0x0010, 'NO_GOOD_INDEX'],
  [0x0020, 'NO_INDEX'], [0x0040, 'CURSOR_EXISTS'], [0x0080, 'LAST_ROW_SENT'], [0x0100, 'DB_DROPPED'],
  [0x0200, 'NO_BACKSLASH_ESCAPES'], [0x0400, 'METADATA_CHANGED'], [0x0800, 'QUERY_WAS_SLOW'],
  [0x1000, 'PS_OUT_PARAMS'], [0x2000, 'IN_TRANS_READONLY'], [0x4000, 'SESSION_STATE_CHANGED'],
];
const statusStr = (s) =>
  s === undefined ? 'undefined' : STATUS.filter(([b]) => s & b).map(([, n]) => n).join(',') || '-';

function headerStr(h) {
  const parts = [
    `affectedRows=${h.affectedRows}`,
    `insertId=${h.insertId}`,
    `warnings=${h.warningStatus}`,
    `info=${JSON.stringify(h.info)}`,
    `changedRows=${h.changedRows}`,
    `status=${statusStr(h.serverStatus)}`,
  ];
  if (h.stateChanges) {
    // last_gtid (tracked by the sandbox's session_track_system_variables) moves on with every
    // write: print that it was reported, not its value
    const sc = JSON.parse(JSON.stringify(h.stateChanges));
    if (sc.systemVariables && sc.systemVariables.last_gtid !== undefined) {
      sc.systemVariables.last_gtid = sc.systemVariables.last_gtid === '' ? '' : '<gtid>';
    }
    if (sc.systemVariables) {
      // The node lists the variables of one OK in the order of its tracker's hash, which
      // depends on the list tracked (sluice's '*' under pool_mode transaction, README): the
      // entries are a set, printed sorted.
      const sorted = {};
      for (const k of Object.keys(sc.systemVariables).sort()) sorted[k] = sc.systemVariables[k];
      sc.systemVariables = sorted;
    }
    parts.push(`stateChanges=${JSON.stringify(sc)}`);
  }
  return 'OK ' + parts.join(' ');
}

function errStr(e) {
  if (!e) return 'ERR <none>';
  if (e.errno !== undefined || e.sqlState !== undefined) {
    return `ERR errno=${e.errno} code=${e.code} sqlState=${e.sqlState} fatal=${Boolean(e.fatal)} message=${JSON.stringify(e.sqlMessage !== undefined ? e.sqlMessage : e.message)}`;
  }
  return `ERR code=${e.code} fatal=${Boolean(e.fatal)} message=${JSON.stringify(e.message)}`;
}

function sqlStr(sql) {
  const s = String(sql).replace(/\s+/g, ' ');
  if (s.length > 2000) return `${JSON.stringify(s.slice(0, 80))}... (${s.length} chars, sha256:${sha(Buffer.from(s))})`;
  return s;
}

// printRows: one result set. Rows come as arrays (rowsAsArray) or objects.
function printResultSet(rows, fields, label, opts) {
  const o = opts || {};
  p(`${label}resultset: ${fields.length} column(s), ${rows.length} row(s)`);
  if (!o.noMeta) for (const f of fields) p(`  col ${fieldStr(f)}`);
  const names = fields.map((f) => f.name);
  rows.forEach((r, i) => {
    const cells = Array.isArray(r) ? r : names.map((n) => r[n]);
    if (!Array.isArray(r) && i === 0) {
      p(`  rows are objects, keys of row 0: ${JSON.stringify(Object.keys(r))}`);
    }
    if (cells.length <= 3 && !o.vertical) {
      p(`  row ${i}: ` + cells.map((c, j) => `${names[j]}=${val(c)}`).join(' | '));
    } else {
      p(`  row ${i}:`);
      cells.forEach((c, j) => p(`    ${names[j]} = ${val(c)}`));
    }
  });
}

function isMulti(results, fields) {
  return (
    Array.isArray(fields) &&
    fields.length > 0 &&
    (fields[0] === undefined || Array.isArray(fields[0]))
  ) || (Array.isArray(results) && fields === undefined && results.length > 0 && results[0] && results[0].constructor && results[0].constructor.name === 'ResultSetHeader');
}

function printResults(results, fields, opts) {
  if (isMulti(results, fields)) {
    p(`results: ${results.length} result(s)`);
    results.forEach((r, i) => {
      const f = fields ? fields[i] : undefined;
      if (Array.isArray(r) && Array.isArray(f)) printResultSet(r, f, `  [${i}] `, opts);
      else if (r && r.constructor && r.constructor.name === 'ResultSetHeader') p(`  [${i}] ${headerStr(r)}`);
      else p(`  [${i}] ${val(r)}`);
    });
    return;
  }
  if (Array.isArray(results) && Array.isArray(fields)) {
    printResultSet(results, fields, '', opts);
  } else if (results && results.constructor && results.constructor.name === 'ResultSetHeader') {
    p(headerStr(results));
  } else {
    p(`result ${val(results)}`);
  }
}

// ---------------------------------------------------------------- calls with a guard

class Broken extends Error {}

// call(conn, label, start): start(cb) issues one driver call; resolves {err, a, b}. The guard
// fires a little after mysql2's own timeout, destroys the connection and reports a timeout.
function call(conn, start) {
  return new Promise((resolve) => {
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      try {
        if (conn) conn.destroy();
      } catch (_) {
        /* ignore */
      }
      const e = new Error(`no answer within ${(TIMEOUT + 2000) / 1000} s`);
      e.code = 'BATTERY_TIMEOUT';
      e.fatal = true;
      resolve({ err: e });
    }, TIMEOUT + 2000);
    try {
      start((err, a, b) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve({ err, a, b });
      });
    } catch (e) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ err: e });
    }
  });
}

const fatal = (e) =>
  e && (e.fatal || e.code === 'PROTOCOL_SEQUENCE_TIMEOUT' || e.code === 'BATTERY_TIMEOUT');

function breakOn(conn, err) {
  if (fatal(err)) {
    try {
      conn.destroy();
    } catch (_) {
      /* ignore */
    }
    throw new Broken('connection broken');
  }
}

// ---------------------------------------------------------------- connections

let opened = [];

function baseOptions(extra) {
  return Object.assign(
    {
      host: HOST,
      port: PORT,
      user: USER,
      password: PASSWORD,
      database: DB,
      connectTimeout: TIMEOUT,
      timezone: 'Z',
    },
    extra || {}
  );
}

async function connect(extra, label) {
  const conn = mysql.createConnection(baseOptions(extra));
  conn.on('error', (e) => p(`connection error event: ${errStr(e)}`));
  opened.push(conn);
  const r = await call(conn, (cb) => conn.connect(cb));
  if (r.err) {
    p(`connect${label ? ' ' + label : ''}: ${errStr(r.err)}`);
    try {
      conn.destroy();
    } catch (_) {
      /* ignore */
    }
    throw new Broken('cannot connect');
  }
  if (label) p(`connect ${label}: ok`);
  return conn;
}

async function end(conn, label) {
  const r = await call(conn, (cb) => conn.end(cb));
  p(`end${label ? ' ' + label : ''}: ${r.err ? errStr(r.err) : 'ok'}`);
}

function destroyAll() {
  for (const c of opened) {
    try {
      c.destroy();
    } catch (_) {
      /* ignore */
    }
  }
  opened = [];
}

// q: text protocol (COM_QUERY). Returns {err, results, fields}; throws Broken on a fatal error.
async function q(conn, sql, values, opts) {
  const o = Object.assign({ rowsAsArray: true }, opts || {});
  const print = o.print !== false;
  delete o.print;
  const printOpts = { noMeta: o.noMeta, vertical: o.vertical };
  delete o.noMeta;
  delete o.vertical;
  if (print) p(`> ${sqlStr(sql)}${values !== undefined ? ' params=' + paramsStr(values) : ''}`);
  const r = await call(conn, (cb) =>
    conn.query(Object.assign({ sql, timeout: TIMEOUT }, o), values, cb)
  );
  if (r.err) {
    p(errStr(r.err));
    breakOn(conn, r.err);
  } else if (print) {
    printResults(r.a, r.b, printOpts);
  }
  return { err: r.err, results: r.a, fields: r.b };
}

// x: binary protocol (connection.execute: COM_STMT_PREPARE, cached, then COM_STMT_EXECUTE).
async function x(conn, sql, values, opts) {
  const o = Object.assign({ rowsAsArray: true }, opts || {});
  const print = o.print !== false;
  delete o.print;
  const printOpts = { noMeta: o.noMeta, vertical: o.vertical };
  delete o.noMeta;
  delete o.vertical;
  if (print) p(`>x ${sqlStr(sql)}${values !== undefined ? ' params=' + paramsStr(values) : ''}`);
  const r = await call(conn, (cb) =>
    conn.execute(Object.assign({ sql, timeout: TIMEOUT }, o), values || [], cb)
  );
  if (r.err) {
    p(errStr(r.err));
    breakOn(conn, r.err);
  } else if (print) {
    printResults(r.a, r.b, printOpts);
  }
  return { err: r.err, results: r.a, fields: r.b };
}

function paramsStr(values) {
  if (!Array.isArray(values)) return val(values);
  return '[' + values.map(val).join(', ') + ']';
}

// one value of a one-row select, quietly
async function scalar(conn, sql) {
  const r = await q(conn, sql, undefined, { print: false });
  if (r.err) return undefined;
  return r.results[0][0];
}

// ---------------------------------------------------------------- scenarios

const scenarios = [];
function scenario(name, modes, fn) {
  scenarios.push({ name, modes, fn });
}

const TYPES_COLS = `id, c_tinyint, c_utinyint, c_smallint, c_usmallint, c_mediumint, c_umediumint,
  c_int, c_uint, c_bigint, c_ubigint, c_decimal, c_decimal_big, c_float, c_double, c_bit1, c_bit64,
  c_date, c_time, c_time6, c_datetime, c_datetime6, c_timestamp, c_year,
  c_char, c_varchar, c_text, c_blob, c_binary, c_varbinary, c_enum, c_set, c_json, c_point, c_geom`;

const SETUP = [
  'DROP TABLE IF EXISTS types, json_t, t, dml, tx, big, infile_t, u8, l1, errs',
  'DROP PROCEDURE IF EXISTS p_multi',
  'DROP PROCEDURE IF EXISTS p_out',
  'DROP PROCEDURE IF EXISTS p_cursor',
  'DROP PROCEDURE IF EXISTS p_cursor_loop',
  'DROP PROCEDURE IF EXISTS p_err',
  `CREATE TABLE types (
    id INT PRIMARY KEY,
    c_tinyint TINYINT, c_utinyint TINYINT UNSIGNED,
    c_smallint SMALLINT, c_usmallint SMALLINT UNSIGNED,
    c_mediumint MEDIUMINT, c_umediumint MEDIUMINT UNSIGNED,
    c_int INT, c_uint INT UNSIGNED,
    c_bigint BIGINT, c_ubigint BIGINT UNSIGNED,
    c_decimal DECIMAL(20,6), c_decimal_big DECIMAL(65,30),
    c_float FLOAT, c_double DOUBLE,
    c_bit1 BIT(1), c_bit64 BIT(64),
    c_date DATE, c_time TIME, c_time6 TIME(6), c_datetime DATETIME, c_datetime6 DATETIME(6),
    c_timestamp TIMESTAMP(6) NULL DEFAULT NULL, c_year YEAR,
    c_char CHAR(10), c_varchar VARCHAR(100), c_text TEXT, c_blob BLOB,
    c_binary BINARY(4), c_varbinary VARBINARY(10),
    c_enum ENUM('a','b','c'), c_set SET('x','y','z'),
    c_json JSON, c_point POINT, c_geom GEOMETRY
  ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci`,
  `INSERT INTO types VALUES
   (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
    -99999999999999.999999, -12345678901234567890123456789012345.123456789012345678901234567890,
    -3.40282e38, -1.7976931348623157e308, b'0', b'0',
    '1000-01-01', '-838:59:59', '-838:59:59.000000', '1000-01-01 00:00:00', '1000-01-01 00:00:00.000000',
    '1970-01-01 00:00:01.000000', 1901,
    '', '', '', '', X'00000000', X'', 'a', '', '[]', ST_PointFromText('POINT(0 0)'),
    ST_GeomFromText('LINESTRING(0 0,1 1,2 1)')),
   (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,
    9223372036854775807, 18446744073709551615,
    99999999999999.999999, 99999999999999999999999999999999999.999999999999999999999999999999,
    3.40282e38, 1.7976931348623157e308, b'1', b'1111111111111111111111111111111111111111111111111111111111111111',
    '9999-12-31', '838:59:59', '838:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999',
    '2038-01-19 03:14:07.999999', 2155,
    'zzzzzzzzzz', REPEAT('v', 100), REPEAT('t', 300), REPEAT(X'FF', 70), X'FFFFFFFF', X'FFFFFFFFFFFFFFFFFFFF',
    'c', 'x,y,z', '{"k":[1,2,3],"n":null}', ST_PointFromText('POINT(-180.5 90.25)'),
    ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(2 2,4 2,4 4,2 2))')),
   (3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12345.678901, 0.000000000000000000000000000001,
    3.14, 2.718281828459045, b'1', b'101',
    '2024-02-29', '12:34:56', '12:34:56.789012', '2024-02-29 12:34:56', '2024-02-29 12:34:56.123456',
    '2024-02-29 12:34:56.654321', 2024,
    'abc', 'héllo wörld 🎉 ñ ß € 中文', 'text ✓', X'00FF10', 'ab', X'0001',
    'b', 'x,z', '{"a": 1, "b": [true, null, "x"], "c": {"d": 1.5}, "e": "é🎉"}',
    ST_PointFromText('POINT(1.5 2.5)'),
    ST_GeomFromText('MULTIPOINT(1 1,2 2)')),
   (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL)`,
  `CREATE TABLE json_t (id INT PRIMARY KEY, j JSON) DEFAULT CHARSET=utf8mb4`,
  `INSERT INTO json_t VALUES (1, '{"a": 1, "b": "x"}'), (2, '[1, "two", 3.5, false]'), (3, '"just a string"'),
   (4, '42'), (5, '12345678901234567890'), (6, 'true'), (7, 'null'), (8, NULL), (9, '{"u": "é 🎉", "nested": {"z": [{}]}}')`,
  `CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20), n INT) DEFAULT CHARSET=utf8mb4`,
  `INSERT INTO t VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30)`,
  `CREATE TABLE dml (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(20) UNIQUE, v INT, t TINYINT) DEFAULT CHARSET=utf8mb4`,
  `CREATE TABLE tx (id INT PRIMARY KEY, v VARCHAR(60)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  `CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT) DEFAULT CHARSET=utf8mb4`,
  `CREATE TABLE infile_t (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2)) DEFAULT CHARSET=utf8mb4`,
  `CREATE TABLE u8 (id INT PRIMARY KEY, s VARCHAR(100)) DEFAULT CHARSET=utf8mb4`,
  `INSERT INTO u8 VALUES (1, 'héllo'), (2, '🎉 party'), (3, 'ñandú €'), (4, '中文字符')`,
  `CREATE TABLE l1 (id INT PRIMARY KEY, s VARCHAR(100)) DEFAULT CHARSET=latin1`,
  `INSERT INTO l1 VALUES (1, 'café'), (2, 'naïve Ø')`,
  `CREATE TABLE errs (id INT PRIMARY KEY, v VARCHAR(5) NOT NULL) DEFAULT CHARSET=utf8mb4`,
  `INSERT INTO errs VALUES (1, 'a')`,
  `CREATE PROCEDURE p_multi()
   BEGIN
     SELECT 1 AS one, 'a' AS letter;
     SELECT id, s FROM t ORDER BY id;
     SELECT COUNT(*) AS n FROM t;
   END`,
  `CREATE PROCEDURE p_out(IN a INT, OUT b INT, INOUT c INT)
   BEGIN
     SET b = a * 2;
     SET c = c + a;
     SELECT a AS a_in, b AS b_out, c AS c_inout;
   END`,
  `CREATE PROCEDURE p_cursor()
   BEGIN
     DECLARE v VARCHAR(20);
     DECLARE c CURSOR FOR SELECT s FROM t ORDER BY id;
     OPEN c;
     FETCH c INTO v;
     CLOSE c;
     SELECT v;
   END`,
  `CREATE PROCEDURE p_cursor_loop(OUT total INT, OUT vnames VARCHAR(200))
   BEGIN
     DECLARE done INT DEFAULT 0;
     DECLARE vs VARCHAR(20);
     DECLARE vn INT;
     DECLARE c CURSOR FOR SELECT s, n FROM t ORDER BY id;
     DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
     SET total = 0;
     SET vnames = '';
     OPEN c;
     rd: LOOP
       FETCH c INTO vs, vn;
       IF done THEN LEAVE rd; END IF;
       SET total = total + vn;
       SET vnames = CONCAT(vnames, IF(vnames = '', '', ','), vs);
     END LOOP;
     CLOSE c;
     SELECT total AS total_in_proc, vnames AS names_in_proc;
   END`,
  `CREATE PROCEDURE p_err()
   BEGIN
     SELECT 'before' AS step;
     SELECT * FROM no_such_table_in_proc;
   END`,
];

scenario('setup', ['rw'], async () => {
  const c = await connect();
  for (const s of SETUP) {
    const r = await q(c, s, undefined, { print: false });
    p(`setup ${s.trim().split(/\s+/).slice(0, 3).join(' ')}: ${r.err ? 'failed (above)' : 'ok'}`);
  }
  await end(c);
});

// ---- 1. column types

async function typesOn(c, proto, label) {
  p(`-- ${label}`);
  const run = proto === 'text' ? q : x;
  await run(c, `SELECT ${TYPES_COLS} FROM types ORDER BY id`, undefined, { vertical: true });
  // expressions and literal types
  await run(
    c,
    `SELECT NULL AS n, 1 AS i, -1 AS neg, 18446744073709551615 AS u64, 1.5 AS dec_lit, 1e0 AS dbl,
     CAST(1.25 AS FLOAT) AS f, 'x' AS s, X'0102' AS bin, DATE '2020-01-02' AS d,
     TIMESTAMP '2020-01-02 03:04:05.678' AS ts, TIME '-01:02:03.5' AS tm, CAST(3 AS UNSIGNED) AS cu,
     JSON_OBJECT('k', 1, 'l', JSON_ARRAY(1, 'x')) AS jo, JSON_EXTRACT('{"a":[1,2]}', '$.a') AS je,
     CAST(b'101' AS UNSIGNED) AS bitnum, 1 = 1 AS boolish`,
    undefined,
    { vertical: true }
  );
}

scenario('types_text', ['rw', 'ro'], async () => {
  const c = await connect();
  await q(c, "SET time_zone = '+00:00'");
  await typesOn(c, 'text', 'text protocol, mysql2 defaults (timezone Z)');
  await end(c);
});

scenario('types_binary', ['rw', 'ro'], async () => {
  const c = await connect();
  await q(c, "SET time_zone = '+00:00'");
  await typesOn(c, 'binary', 'binary protocol (execute), mysql2 defaults (timezone Z)');
  await end(c);
});

scenario('types_strings', ['rw', 'ro'], async () => {
  const c = await connect({
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    jsonStrings: false,
  });
  await q(c, "SET time_zone = '+00:00'");
  await typesOn(c, 'text', 'text protocol, dateStrings + supportBigNumbers + bigNumberStrings');
  await typesOn(c, 'binary', 'binary protocol, dateStrings + supportBigNumbers + bigNumberStrings');
  await end(c);
});

scenario('types_numbers', ['rw', 'ro'], async () => {
  const c = await connect({ supportBigNumbers: true, decimalNumbers: true, typeCast: true });
  await q(c, "SET time_zone = '+00:00'");
  const sql = 'SELECT id, c_bigint, c_ubigint, c_decimal, c_decimal_big, c_bit64, c_year FROM types ORDER BY id';
  p('-- supportBigNumbers (no bigNumberStrings) + decimalNumbers');
  await q(c, sql, undefined, { noMeta: true, vertical: true });
  await x(c, sql, undefined, { noMeta: true, vertical: true });
  p('-- typeCast function: field.type and field.string() for every column');
  const typeCast = (field, next) => {
    if (field.type === 'NEWDECIMAL' || field.type === 'BIT' || field.type === 'JSON' || field.type === 'GEOMETRY') {
      const s = field.type === 'BIT' || field.type === 'GEOMETRY' ? field.buffer() : field.string();
      if (s === null) return `<${field.type} NULL>`;
      return `<${field.type} ${Buffer.isBuffer(s) ? s.toString('hex') : s}>`;
    }
    return next();
  };
  await q(c, 'SELECT id, c_decimal, c_bit64, c_json, c_point FROM types ORDER BY id', undefined, {
    typeCast,
    noMeta: true,
    vertical: true,
  });
  await x(c, 'SELECT id, c_decimal, c_bit64, c_json, c_point FROM types ORDER BY id', undefined, {
    typeCast,
    noMeta: true,
    vertical: true,
  });
  p('-- object rows (no rowsAsArray), nestTables');
  await q(c, 'SELECT t.id, t.s, types.id, types.c_enum FROM t JOIN types ON types.id = t.id ORDER BY t.id', undefined, {
    rowsAsArray: false,
    noMeta: true,
  });
  await q(c, 'SELECT t.id, t.s, types.id, types.c_enum FROM t JOIN types ON types.id = t.id ORDER BY t.id', undefined, {
    rowsAsArray: false,
    nestTables: true,
    noMeta: true,
  });
  await q(c, 'SELECT t.id, t.s, types.id, types.c_enum FROM t JOIN types ON types.id = t.id ORDER BY t.id', undefined, {
    rowsAsArray: false,
    nestTables: '_',
    noMeta: true,
  });
  await end(c);
});

scenario('types_params', ['rw', 'ro'], async () => {
  // values bound as parameters: the binary protocol sends them typed, the text protocol inlines
  // them escaped (client-side). Read-only: the parameters come back as a SELECT.
  const c = await connect({ dateStrings: true });
  await q(c, "SET time_zone = '+00:00'");
  const params = [
    1, -2, 3.5, 2 ** 53, 12345678901234567890n, 'héllo 🎉', '', null, true, false,
    Buffer.from([0, 1, 255]), new Date(Date.UTC(2021, 6, 4, 5, 6, 7, 890)), '2021-07-04',
  ];
  const sql = 'SELECT ? AS p_int, ? AS p_neg, ? AS p_float, ? AS p_2p53, ? AS p_bigint, ? AS p_str, ? AS p_empty, ? AS p_null, ? AS p_true, ? AS p_false, ? AS p_buf, ? AS p_date, ? AS p_datestr';
  await q(c, sql, params, { vertical: true });
  await x(c, sql, params, { vertical: true });
  await x(c, 'SELECT id, s FROM t WHERE id IN (?, ?) OR s = ? ORDER BY id', [1, '3', 'two']);
  await x(c, 'SELECT id, s FROM t WHERE id = ?', [999]);
  await end(c);
});

scenario('json', ['rw', 'ro'], async () => {
  const c = await connect();
  p('-- mysql2 parses JSON only when the column metadata says JSON (MariaDB: extended metadata format=json)');
  const show = (r) => {
    if (r.err) return;
    for (const row of r.results) {
      const v = row[1];
      p(`  id=${row[0]} typeof=${v === null ? 'null' : typeof v} stringify=${JSON.stringify(v)}`);
    }
  };
  show(await q(c, 'SELECT id, j FROM json_t ORDER BY id'));
  show(await x(c, 'SELECT id, j FROM json_t ORDER BY id'));
  show(await q(c, "SELECT 1 AS id, JSON_OBJECT('a', 1) AS j UNION ALL SELECT 2, JSON_ARRAY() ORDER BY id"));
  show(await x(c, "SELECT 1 AS id, JSON_OBJECT('a', 1) AS j UNION ALL SELECT 2, JSON_ARRAY() ORDER BY id"));
  show(await q(c, 'SELECT id, c_json FROM types ORDER BY id'));
  show(await x(c, "SELECT id, JSON_VALUE(j, '$.a') AS j FROM json_t WHERE id = 1"));
  show(await q(c, "SELECT id, CAST(j AS CHAR) AS j FROM json_t WHERE id = 1"));
  await end(c);
  p('-- jsonStrings: true');
  const c2 = await connect({ jsonStrings: true });
  show(await q(c2, 'SELECT id, j FROM json_t ORDER BY id', undefined, { noMeta: true }));
  show(await x(c2, 'SELECT id, j FROM json_t ORDER BY id', undefined, { noMeta: true }));
  await end(c2);
  p('-- supportBigNumbers + bigNumberStrings on a JSON big number');
  const c3 = await connect({ supportBigNumbers: true, bigNumberStrings: true });
  show(await q(c3, 'SELECT id, j FROM json_t WHERE id IN (4, 5) ORDER BY id', undefined, { noMeta: true }));
  await end(c3);
});

scenario('prepare_statement', ['rw', 'ro'], async () => {
  const c = await connect({ dateStrings: true });
  const sqls = [
    'SELECT id, s, n FROM t WHERE id >= ? ORDER BY id',
    'SELECT id, c_int, c_json, c_date, c_point FROM types WHERE id = ?',
    'SELECT ? + ? AS sum, CONCAT(?, ?) AS cat',
  ];
  for (const sql of sqls) {
    p(`> prepare ${sql}`);
    const r = await call(c, (cb) => c.prepare(sql, cb));
    if (r.err) {
      p(errStr(r.err));
      breakOn(c, r.err);
      continue;
    }
    const st = r.a;
    p(`prepared: ${st.parameters.length} parameter(s), ${st.columns.length} column(s)`);
    for (const f of st.parameters) p(`  param ${fieldStr(f)}`);
    for (const f of st.columns) p(`  col ${fieldStr(f)}`);
    const argsets = sql.startsWith('SELECT ? +') ? [[1, 2, 'a', 'b'], [1.5, '2', null, 'z']] : [[2], [3], [999]];
    for (const args of argsets) {
      p(`> statement.execute params=${paramsStr(args)}`);
      const e = await call(c, (cb) => st.execute(args, cb));
      if (e.err) {
        p(errStr(e.err));
        breakOn(c, e.err);
      } else printResults(e.a, e.b, { noMeta: true, vertical: true });
    }
    st.close();
    p('statement.close()');
  }
  p('> prepare with a syntax error');
  const bad = await call(c, (cb) => c.prepare('SELEC id FROM t WHERE id = ?', cb));
  p(bad.err ? errStr(bad.err) : 'prepared?!');
  p('> prepare on an unknown table');
  const bad2 = await call(c, (cb) => c.prepare('SELECT * FROM no_such_table WHERE id = ?', cb));
  p(bad2.err ? errStr(bad2.err) : 'prepared?!');
  p('> execute with a wrong parameter count');
  const bad3 = await call(c, (cb) => c.execute({ sql: 'SELECT ? AS a', timeout: TIMEOUT }, [1, 2], cb));
  if (bad3.err) p(errStr(bad3.err));
  else printResults(bad3.a, bad3.b);
  breakOn(c, bad3.err);
  await q(c, 'SELECT 1 AS still_alive');
  await end(c);
});

// ---- 2. DML

scenario('dml', ['rw'], async () => {
  const c = await connect();
  await q(c, 'DELETE FROM dml');
  await q(c, 'ALTER TABLE dml AUTO_INCREMENT = 1');
  await q(c, "INSERT INTO dml (k, v) VALUES ('a', 1), ('b', 2), ('c', 3)");
  await q(c, 'SELECT LAST_INSERT_ID() AS lid');
  await q(c, "INSERT INTO dml (k, v) VALUES ('d', 4)");
  await x(c, 'INSERT INTO dml (k, v) VALUES (?, ?)', ['e', 5]);
  await x(c, 'INSERT INTO dml (k, v) VALUES (?, ?), (?, ?)', ['f', 6, 'g', 7]);
  await q(c, 'UPDATE dml SET v = v + 10 WHERE v <= 3');
  await q(c, 'UPDATE dml SET v = v WHERE id = 1');
  await x(c, 'UPDATE dml SET v = v * 2 WHERE id > ?', [5]);
  await q(c, 'UPDATE dml SET v = 0 WHERE id = 12345');
  await q(c, "INSERT INTO dml (k, v) VALUES ('a', 100) ON DUPLICATE KEY UPDATE v = VALUES(v)");
  await q(c, "INSERT INTO dml (k, v) VALUES ('a', 100) ON DUPLICATE KEY UPDATE v = VALUES(v)");
  await q(c, "INSERT INTO dml (k, v) VALUES ('a', 1), ('h', 8) ON DUPLICATE KEY UPDATE v = v + 1");
  await x(c, 'INSERT INTO dml (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = ?', ['b', 0, 42]);
  await q(c, "INSERT INTO dml (id, k, v) VALUES (100, 'explicit', 1)");
  await q(c, "INSERT INTO dml (k, v) VALUES ('after_explicit', 1)");
  await q(c, 'SELECT LAST_INSERT_ID() AS lid, ROW_COUNT() AS rc');
  await q(c, 'SELECT LAST_INSERT_ID(777) AS set_lid');
  await q(c, 'SELECT LAST_INSERT_ID() AS lid');
  await q(c, "INSERT IGNORE INTO dml (k, v) VALUES ('a', 1), ('new1', 1)");
  await q(c, 'SHOW WARNINGS');
  await q(c, "REPLACE INTO dml (k, v) VALUES ('c', 33)");
  p('-- warnings (sql_mode without STRICT_*, so that bad values are warnings)');
  await q(c, "SET SESSION sql_mode = ''");
  await q(c, "INSERT INTO dml (k, v, t) VALUES ('w1', 1, 300), ('w2', 'abc', -300)");
  await q(c, 'SHOW WARNINGS');
  await q(c, 'SELECT @@warning_count AS wc, @@error_count AS ec');
  await x(c, 'INSERT INTO dml (k, v, t) VALUES (?, ?, ?)', ['w3', 1, 1000]);
  await x(c, 'SHOW WARNINGS');
  await q(c, 'SELECT 1/0 AS div0');
  await q(c, 'SHOW WARNINGS');
  await q(c, "UPDATE dml SET t = 999 WHERE k IN ('a', 'b')");
  await q(c, 'SHOW COUNT(*) WARNINGS');
  await q(c, 'SET SESSION sql_mode = DEFAULT');
  await q(c, "DELETE FROM dml WHERE k LIKE 'w%'");
  await x(c, 'DELETE FROM dml WHERE v > ?', [1000]);
  await q(c, 'DELETE FROM dml WHERE id = 12345');
  await q(c, 'SELECT id, k, v, t FROM dml ORDER BY id');
  await end(c);
});

scenario('dml_no_session_track', ['rw'], async () => {
  // The same OK packets for a client that does not negotiate CLIENT_SESSION_TRACK (mysql2's
  // flags option can drop it), as mysqlnd and PyMySQL do. mysql2 reads the info string as
  // length-prefixed whenever the server (not the session) has CLIENT_SESSION_TRACK, which is
  // what MariaDB sends anyway; a proxy that re-encodes it without its length byte shows here
  // as an info string missing its first character.
  const c = await connect({ flags: '-SESSION_TRACK' });
  await q(c, "DELETE FROM dml WHERE k LIKE 'nst%'");
  await q(c, "INSERT INTO dml (k, v) VALUES ('nst1', 1), ('nst2', 2), ('nst3', 3)");
  await q(c, "UPDATE dml SET v = v + 1 WHERE k LIKE 'nst%'");
  await x(c, 'UPDATE dml SET v = v + ? WHERE k LIKE ?', [1, 'nst%']);
  await q(c, "INSERT INTO dml (k, v) VALUES ('nst1', 1), ('nst4', 4) ON DUPLICATE KEY UPDATE v = 0");
  await q(c, "DELETE FROM dml WHERE k LIKE 'nst%'");
  await q(c, "SET time_zone = '+01:00'");
  await q(c, 'SELECT @@time_zone AS tz');
  await end(c);
});

// ---- 3. transactions

scenario('transactions', ['rw'], async () => {
  const c = await connect();
  await q(c, 'DELETE FROM tx');
  const api = async (what, fn) => {
    p(`> ${what}`);
    const r = await call(c, (cb) => fn(cb));
    if (r.err) {
      p(errStr(r.err));
      breakOn(c, r.err);
    } else printResults(r.a, r.b);
  };
  p('-- driver API: beginTransaction / commit / rollback');
  await api('beginTransaction()', (cb) => c.beginTransaction(cb));
  await q(c, "INSERT INTO tx VALUES (1, 'committed')");
  await q(c, 'SELECT @@in_transaction AS in_tx');
  await api('commit()', (cb) => c.commit(cb));
  await api('beginTransaction()', (cb) => c.beginTransaction(cb));
  await q(c, "INSERT INTO tx VALUES (2, 'rolled back')");
  await q(c, 'SELECT id, v FROM tx ORDER BY id');
  await api('rollback()', (cb) => c.rollback(cb));
  await q(c, 'SELECT id, v FROM tx ORDER BY id');
  p('-- SQL');
  await q(c, 'BEGIN');
  await q(c, "INSERT INTO tx VALUES (3, 'sql commit')");
  await q(c, 'COMMIT');
  await q(c, 'START TRANSACTION');
  await x(c, 'INSERT INTO tx VALUES (?, ?)', [4, 'sql rollback']);
  await q(c, 'ROLLBACK');
  await q(c, 'START TRANSACTION READ ONLY');
  await q(c, 'SELECT id, v FROM tx ORDER BY id');
  await q(c, "INSERT INTO tx VALUES (5, 'in read only tx')");
  await q(c, 'COMMIT');
  await q(c, 'BEGIN');
  await q(c, "INSERT INTO tx VALUES (6, 'savepoint')");
  await q(c, 'SAVEPOINT sp1');
  await q(c, "INSERT INTO tx VALUES (7, 'after savepoint')");
  await q(c, 'ROLLBACK TO SAVEPOINT sp1');
  await q(c, 'RELEASE SAVEPOINT sp1');
  await q(c, 'COMMIT');
  p('-- autocommit off / on');
  await q(c, 'SET autocommit = 0');
  await q(c, 'SELECT @@autocommit AS ac');
  await q(c, "INSERT INTO tx VALUES (8, 'autocommit off, rolled back')");
  await q(c, 'ROLLBACK');
  await q(c, "INSERT INTO tx VALUES (9, 'autocommit off, committed')");
  await q(c, 'COMMIT');
  await q(c, "INSERT INTO tx VALUES (10, 'pending at autocommit=1')");
  await q(c, 'SET autocommit = 1');
  await q(c, 'SELECT @@autocommit AS ac, @@in_transaction AS in_tx');
  await q(c, 'ROLLBACK');
  await q(c, 'SELECT id, v FROM tx ORDER BY id');
  p('-- what another connection sees');
  const c2 = await connect();
  await q(c2, 'SELECT id, v FROM tx ORDER BY id', undefined, { noMeta: true });
  await q(c, 'BEGIN');
  await q(c, "UPDATE tx SET v = 'uncommitted' WHERE id = 1");
  await q(c2, 'SELECT id, v FROM tx WHERE id = 1', undefined, { noMeta: true });
  await q(c, 'ROLLBACK');
  await q(c2, 'SELECT id, v FROM tx WHERE id = 1', undefined, { noMeta: true });
  await end(c2);
  await end(c);
});

// ---- 4. multi-statements

scenario('multi_statements', ['rw'], async () => {
  const c = await connect({ multipleStatements: true });
  await q(c, "SELECT 1 AS a; INSERT INTO dml (k, v) VALUES ('m1', 1), ('m2', 2); SET @ms = 5; SELECT @ms AS ms, 'x' AS s; UPDATE dml SET v = v + 1 WHERE k LIKE 'm%'; DELETE FROM dml WHERE k LIKE 'm%'");
  await q(c, 'SELECT id, s FROM t ORDER BY id; SELECT COUNT(*) AS n FROM t; SELECT id FROM t WHERE id < 0');
  await q(c, "BEGIN; INSERT INTO tx VALUES (50, 'multi'); ROLLBACK; SELECT COUNT(*) AS n50 FROM tx WHERE id = 50");
  p('-- error in the middle of a batch');
  await q(c, 'SELECT 1 AS first; SELECT * FROM no_such_table; SELECT 3 AS third');
  await q(c, 'SELECT 2 AS after_error');
  await q(c, 'SELECT 1 AS ok1; SELEC syntax; SELECT 3');
  await q(c, 'SELECT 3 AS after_syntax_error');
  p('-- trailing semicolon and an empty statement');
  await q(c, 'SELECT 1 AS one;');
  await end(c);
  p('-- multi statements refused without multipleStatements');
  const c2 = await connect();
  await q(c2, 'SELECT 1 AS a; SELECT 2 AS b');
  await q(c2, 'SELECT 3 AS after');
  await end(c2);
});

scenario('multi_statements_ro', ['ro'], async () => {
  const c = await connect({ multipleStatements: true });
  await q(c, 'SELECT id, s FROM t ORDER BY id; SELECT COUNT(*) AS n FROM t; SELECT id FROM t WHERE id < 0');
  await q(c, "SELECT 'a' AS s1, 1 AS n1; SELECT id FROM types ORDER BY id; SELECT @@session.autocommit AS ac");
  await q(c, 'SELECT 1 AS first; SELECT * FROM no_such_table; SELECT 3 AS third');
  await q(c, 'SELECT 2 AS after_error');
  await end(c);
});

// ---- 5. stored procedures

scenario('procedures', ['rw'], async () => {
  const c = await connect({ multipleStatements: true });
  p('-- text protocol');
  await q(c, 'CALL p_multi()');
  await q(c, 'SET @b = NULL, @c = 10');
  await q(c, 'CALL p_out(5, @b, @c)');
  await q(c, 'SELECT @b AS b, @c AS c');
  await q(c, 'CALL p_err()');
  await q(c, 'SELECT 1 AS after_proc_error');
  await q(c, 'CALL p_multi(); SELECT 2 AS after_call');
  await q(c, 'CALL no_such_proc()');
  p('-- binary protocol');
  await x(c, 'CALL p_multi()');
  await x(c, 'SET @c = 20');
  await x(c, 'CALL p_out(?, @b, @c)', [7]);
  await x(c, 'SELECT @b AS b, @c AS c');
  await x(c, 'CALL p_out(?, ?, ?)', [3, null, 100]);
  await x(c, 'CALL p_err()');
  await x(c, 'SELECT 1 AS after_proc_error');
  await end(c);
});

scenario('procedure_cursor_text', ['rw'], async () => {
  const c = await connect();
  await q(c, 'CALL p_cursor()');
  await q(c, 'CALL p_cursor_loop(@total, @names)');
  await q(c, 'SELECT @total AS total, @names AS names');
  await end(c);
});

scenario('procedure_cursor_binary', ['rw'], async () => {
  const c = await connect();
  await x(c, 'CALL p_cursor()');
  await x(c, 'CALL p_cursor_loop(@total, @names)');
  await x(c, 'SELECT @total AS total, @names AS names');
  await x(c, 'CALL p_cursor_loop(?, ?)', [null, null]);
  await end(c);
});

// ---- 6. variables

scenario('variables', ['rw', 'ro'], async () => {
  const c = await connect();
  await q(c, "SET @v = 42, @s = 'str', @n = NULL, @f = 1.5, @d = DATE '2020-02-02'");
  await q(c, 'SELECT @v AS v, @s AS s, @n AS n, @f AS f, @d AS d, @undefined AS u', undefined, { vertical: true });
  await x(c, 'SELECT @v AS v, @s AS s, @n AS n, @f AS f, @d AS d, @undefined AS u', undefined, { vertical: true });
  await x(c, 'SET @p = ?', ['from binary']);
  await q(c, 'SELECT @p AS p');
  await q(c, 'SELECT @cnt := COUNT(*) AS cnt FROM t');
  await q(c, 'SELECT @cnt AS cnt_again');
  await q(c, "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,ANSI_QUOTES'");
  await q(c, "SET time_zone = '+05:30'");
  await q(c, 'SELECT @@session.sql_mode AS sql_mode, @@time_zone AS tz, @@session.autocommit AS ac');
  await q(c, 'SELECT "ansi quoted" FROM t WHERE id = 1');
  await q(c, "SELECT FROM_UNIXTIME(0) AS epoch_local, CONVERT_TZ('2020-01-01 00:00:00', '+00:00', @@time_zone) AS conv");
  await q(c, 'SET SESSION sql_mode = DEFAULT, time_zone = DEFAULT');
  await q(c, 'SELECT @@session.sql_mode = @@global.sql_mode AS mode_default, @@time_zone AS tz');
  await q(c, 'SET SESSION group_concat_max_len = 7, SESSION div_precision_increment = 2');
  await q(c, 'SELECT GROUP_CONCAT(s ORDER BY id) AS gc, 1/3 AS third FROM t');
  await q(c, 'SHOW SESSION VARIABLES LIKE \'group_concat_max_len\'');
  await q(c, 'SET @@session.wait_timeout = 12345');
  await q(c, 'SELECT @@session.wait_timeout AS wt');
  await q(c, 'SET NAMES utf8mb4 COLLATE utf8mb4_bin');
  await q(c, 'SELECT @@character_set_client AS csc, @@character_set_results AS csr, @@collation_connection AS coll');
  await q(c, 'SET @@session.autocommit = 1');
  await q(c, "SELECT @@session.tx_isolation AS iso, @@session.max_allowed_packet >= 16777216 AS map_ok");
  await q(c, 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
  await q(c, 'SELECT @@session.tx_isolation AS iso');
  await q(c, 'SELECT SUBSTRING_INDEX(CURRENT_USER(), \'@\', 1) AS user, DATABASE() AS db');
  await end(c);
});

// ---- 7. charsets

scenario('charsets', ['rw', 'ro'], async () => {
  const c = await connect({ charset: 'utf8mb4_unicode_ci' });
  await q(c, 'SELECT @@character_set_client AS csc, @@character_set_connection AS cscon, @@character_set_results AS csr, @@collation_connection AS coll');
  await q(c, 'SELECT id, s, HEX(s) AS hx, CHAR_LENGTH(s) AS cl FROM u8 ORDER BY id');
  await x(c, 'SELECT id, s, HEX(s) AS hx, CHAR_LENGTH(s) AS cl FROM u8 ORDER BY id', undefined, { noMeta: true });
  await q(c, "SELECT 'é🎉' AS lit, HEX('é🎉') AS hx, ? AS param", ['ñ🙂'], { noMeta: true });
  await x(c, "SELECT 'é🎉' AS lit, HEX(?) AS hx, ? AS param", ['ñ🙂', 'ñ🙂'], { noMeta: true });
  await q(c, 'SELECT id, s, HEX(s) AS hx FROM l1 ORDER BY id');
  if (RW) {
    await x(c, 'INSERT INTO u8 VALUES (?, ?) ON DUPLICATE KEY UPDATE s = VALUES(s)', [10, 'bound 🎉 é']);
    await q(c, "INSERT INTO u8 VALUES (11, 'inline 🎉 é') ON DUPLICATE KEY UPDATE s = VALUES(s)");
    await q(c, 'SELECT id, s, HEX(s) AS hx FROM u8 WHERE id >= 10 ORDER BY id', undefined, { noMeta: true });
  }
  p('-- SET NAMES latin1 on a utf8mb4 connection');
  await q(c, 'SET NAMES latin1');
  await q(c, 'SELECT @@character_set_client AS csc, @@character_set_results AS csr');
  await q(c, 'SELECT id, s, HEX(s) AS hx FROM u8 ORDER BY id');
  await q(c, 'SELECT id, s, HEX(s) AS hx FROM l1 ORDER BY id');
  await q(c, "SELECT 'é' AS lit, HEX('é') AS hx");
  p('-- SET NAMES utf8mb4 again');
  await q(c, 'SET NAMES utf8mb4');
  await q(c, 'SELECT id, s FROM u8 WHERE id = 2', undefined, { noMeta: true });
  await q(c, 'SET NAMES binary');
  await q(c, 'SELECT id, s FROM u8 WHERE id = 1');
  await q(c, 'SET NAMES utf8mb4');
  await end(c);
  p('-- connection charset latin1_swedish_ci');
  const l = await connect({ charset: 'latin1_swedish_ci' });
  await q(l, 'SELECT @@character_set_client AS csc, @@character_set_results AS csr, @@collation_connection AS coll');
  await q(l, 'SELECT id, s, HEX(s) AS hx FROM l1 ORDER BY id');
  await q(l, 'SELECT id, s, HEX(s) AS hx FROM u8 ORDER BY id');
  await q(l, "SELECT 'ü' AS lit, HEX('ü') AS hx, HEX(?) AS hp", ['ü']);
  await x(l, 'SELECT HEX(?) AS hp, ? AS back', ['ü', 'ü'], { noMeta: true });
  if (RW) {
    await q(l, "INSERT INTO l1 VALUES (10, 'über') ON DUPLICATE KEY UPDATE s = VALUES(s)");
    await q(l, 'SELECT id, s, HEX(s) AS hx FROM l1 WHERE id = 10', undefined, { noMeta: true });
  }
  await end(l);
  p('-- connection charset utf8mb3 (utf8_general_ci)');
  const u3 = await connect({ charset: 'utf8_general_ci' });
  await q(u3, 'SELECT @@character_set_client AS csc, @@collation_connection AS coll');
  await q(u3, 'SELECT id, s, HEX(s) AS hx FROM u8 ORDER BY id', undefined, { noMeta: true });
  await end(u3);
});

// ---- 8. errors

scenario('errors', ['rw', 'ro'], async () => {
  const c = await connect();
  // A statement sluice cannot classify is refused on a read-only endpoint (error 1290: it may
  // be a write); a syntax error inside a SELECT reaches the replica like any read.
  await q(c, RW ? 'SELEC 1' : 'SELECT 1 FROM WHERE');
  await q(c, 'SELECT 1 AS after_syntax');
  await q(c, 'SELECT * FROM no_such_table');
  await q(c, 'SELECT 2 AS after_unknown_table');
  await q(c, 'SELECT no_such_column FROM t');
  await q(c, 'SELECT 3 AS after_unknown_column');
  await x(c, RW ? 'SELEC ?' : 'SELECT ? FROM WHERE', [1]);
  await x(c, 'SELECT 4 AS after_binary_syntax');
  await x(c, 'SELECT * FROM no_such_table WHERE id = ?', [1]);
  await x(c, 'SELECT 5 AS after_binary_unknown_table');
  await q(c, 'SELECT * FROM nosuchdb.t');
  await q(c, "SELECT CAST('x' AS UNSIGNED) AS bad_cast");
  await q(c, 'USE no_such_db');
  await q(c, 'SELECT DATABASE() AS db');
  await q(c, 'SELECT 1 FROM t WHERE id = (SELECT id FROM t)');
  if (RW) {
    await q(c, 'SIGNAL SQLSTATE \'45000\' SET MESSAGE_TEXT = \'custom failure\', MYSQL_ERRNO = 1644');
    await q(c, 'SELECT 6 AS after_signal');
    await q(c, "INSERT INTO errs VALUES (1, 'dup')");
    await q(c, 'SELECT 7 AS after_duplicate');
    await x(c, 'INSERT INTO errs VALUES (?, ?)', [1, 'dup']);
    await x(c, 'SELECT 8 AS after_binary_duplicate');
    await q(c, "SET SESSION sql_mode = 'STRICT_ALL_TABLES'");
    await q(c, "INSERT INTO errs VALUES (2, 'too long value')");
    await q(c, 'INSERT INTO errs VALUES (3, NULL)');
    await q(c, 'SELECT id, v FROM errs ORDER BY id');
    await q(c, 'BEGIN');
    await q(c, "INSERT INTO errs VALUES (4, 'in tx')");
    await q(c, "INSERT INTO errs VALUES (4, 'dup')");
    await q(c, 'SELECT @@in_transaction AS in_tx');
    await q(c, 'ROLLBACK');
    await q(c, 'SELECT id, v FROM errs ORDER BY id');
  } else {
    await q(c, 'SELECT @@read_only AS ro, @@in_transaction AS in_tx');
  }
  await q(c, 'KILL QUERY 0');
  await q(c, 'SELECT 9 AS the_end');
  await end(c);
});

// ---- 9. big values

scenario('big_values', ['rw'], async () => {
  const c = await connect();
  const blob = Buffer.alloc(BIG);
  for (let i = 0; i < BIG; i++) blob[i] = (i * 31 + (i >> 10)) & 0xff;
  const text = 'abcdefghijklmnopqrstuvwxyz0123456789é'.repeat(Math.ceil(BIG / 38)).slice(0, BIG - 1000);
  p(`blob: ${BIG} bytes sha256:${sha(blob)}; text: ${text.length} chars ${Buffer.byteLength(text)} bytes sha256:${sha(Buffer.from(text))}`);
  // the setup recreated the table; big writes are slow on the sandbox's disk, so two of them:
  // a LONGBLOB through the text protocol, a LONGTEXT (multi-byte) through the binary protocol
  p('-- text protocol insert of a 17 MiB LONGBLOB (client-side escaped: one ~34 MiB statement)');
  await q(c, 'INSERT INTO big (id, b) VALUES (1, ?)', [blob]);
  p('-- binary protocol insert of a 17 MiB LONGTEXT (COM_STMT_EXECUTE split in 16 MiB packets)');
  await x(c, 'INSERT INTO big (id, t) VALUES (?, ?)', [2, text]);
  await q(c, 'SELECT id, LENGTH(b) AS lb, LEFT(SHA2(b, 256), 16) AS hb, CHAR_LENGTH(t) AS ct, LENGTH(t) AS lt, LEFT(SHA2(t, 256), 16) AS ht FROM big ORDER BY id', undefined, { noMeta: true, vertical: true });
  for (const [label, fn] of [['text', q], ['binary', x]]) {
    p(`-- ${label} protocol read back`);
    const r = await fn(c, 'SELECT id, b, t FROM big ORDER BY id', undefined, { print: false });
    if (!r.err) {
      for (const row of r.results) {
        p(`  id=${row[0]} b=${val(row[1])} t=${val(row[2])}`);
      }
    }
  }
  await q(c, "SELECT LENGTH(REPEAT('x', 17 * 1024 * 1024)) AS l");
  const r = await q(c, "SELECT REPEAT('x', 17 * 1024 * 1024) AS r", undefined, { print: false });
  if (!r.err) p(`  text REPEAT: ${val(r.results[0][0])}`);
  const r2 = await x(c, 'SELECT REPEAT(?, ?) AS r', ['y', BIG], { print: false });
  if (!r2.err) p(`  binary REPEAT: ${val(r2.results[0][0])}`);
  await q(c, 'SELECT 1 AS after_big');
  await end(c);
});

scenario('big_values_ro', ['ro'], async () => {
  const c = await connect();
  await q(c, 'SELECT id, LENGTH(b) AS lb, LEFT(SHA2(b, 256), 16) AS hb, CHAR_LENGTH(t) AS ct, LENGTH(t) AS lt, LEFT(SHA2(t, 256), 16) AS ht FROM big ORDER BY id', undefined, { noMeta: true, vertical: true });
  for (const [label, fn] of [['text', q], ['binary', x]]) {
    p(`-- ${label} protocol read back`);
    const r = await fn(c, 'SELECT id, b, t FROM big ORDER BY id', undefined, { print: false });
    if (!r.err) {
      for (const row of r.results) p(`  id=${row[0]} b=${val(row[1])} t=${val(row[2])}`);
    }
  }
  const r = await q(c, "SELECT REPEAT('x', 17 * 1024 * 1024) AS r", undefined, { print: false });
  if (!r.err) p(`  text REPEAT: ${val(r.results[0][0])}`);
  const r2 = await x(c, 'SELECT REPEAT(?, ?) AS r', ['y', BIG], { print: false });
  if (!r2.err) p(`  binary REPEAT: ${val(r2.results[0][0])}`);
  await q(c, 'SELECT 1 AS after_big');
  await end(c);
});

// ---- 10. LOAD DATA LOCAL INFILE

scenario('load_data_local', ['rw'], async () => {
  const file = path.join(WORK, 'node-infile.csv');
  fs.writeFileSync(file, '1,alpha,1.50\n2,béta 🎉,2.25\n3,"quoted, comma",-3.00\n4,bad_amount,xyz\n');
  const bigFile = path.join(WORK, 'node-infile-big.csv');
  const lines = [];
  for (let i = 1000; i < 21000; i++) lines.push(`${i},row ${i} ${'p'.repeat(i % 30)},${(i % 1000) / 4}`);
  fs.writeFileSync(bigFile, lines.join('\n') + '\n');
  const c = await connect({ infileStreamFactory: (pth) => fs.createReadStream(pth) });
  await q(c, 'DELETE FROM infile_t');
  await q(c, `LOAD DATA LOCAL INFILE '${file}' INTO TABLE infile_t CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' LINES TERMINATED BY '\\n' (id, name, amount)`);
  await q(c, 'SHOW WARNINGS');
  await q(c, 'SELECT id, name, amount FROM infile_t ORDER BY id');
  await q(c, `LOAD DATA LOCAL INFILE '${file}' REPLACE INTO TABLE infile_t CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' (id, name, amount)`);
  await q(c, `LOAD DATA LOCAL INFILE '${file}' IGNORE INTO TABLE infile_t CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' (id, name, amount)`);
  await q(c, `LOAD DATA LOCAL INFILE '${bigFile}' INTO TABLE infile_t CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' (id, name, amount)`);
  await q(c, 'SELECT COUNT(*) AS n, SUM(amount) AS s, LEFT(SHA2(GROUP_CONCAT(name ORDER BY id), 256), 16) AS h FROM infile_t');
  p('-- a file that does not exist (the stream errors)');
  await q(c, `LOAD DATA LOCAL INFILE '${path.join(WORK, 'missing.csv')}' INTO TABLE infile_t`);
  await q(c, 'SELECT 1 AS after_missing_file');
  await end(c);
  p('-- no infileStreamFactory');
  const c2 = await connect();
  await q(c2, `LOAD DATA LOCAL INFILE '${file}' INTO TABLE infile_t CHARACTER SET utf8mb4 FIELDS TERMINATED BY ','`);
  await q(c2, 'SELECT 1 AS after_no_factory');
  await end(c2);
});

// ---- 11. reconnect, change user, reset, pool

scenario('reconnect', ['rw', 'ro'], async () => {
  let c = await connect({}, 'first');
  await q(c, "SET @sess = 'first session'");
  await q(c, 'SELECT @sess AS sess');
  await end(c, 'first');
  c = await connect({}, 'second');
  await q(c, 'SELECT @sess AS sess');
  await end(c, 'second');
  p('-- destroy() without COM_QUIT, then reconnect');
  c = await connect({}, 'third');
  await q(c, "SET @sess = 'third'");
  c.destroy();
  p('destroy()');
  const r = await call(c, (cb) => c.query({ sql: 'SELECT 1', timeout: TIMEOUT }, cb));
  p(`query after destroy: ${r.err ? errStr(r.err) : 'answered?!'}`);
  c = await connect({}, 'fourth');
  await q(c, 'SELECT @sess AS sess, 1 AS fourth');
  await end(c, 'fourth');
  p('-- wrong password, unknown database');
  try {
    await connect({ password: 'wrong-password' }, 'wrong password');
  } catch (e) {
    if (!(e instanceof Broken)) throw e;
  }
  try {
    await connect({ database: 'no_such_db_for_node' }, 'unknown database');
  } catch (e) {
    if (!(e instanceof Broken)) throw e;
  }
  c = await connect({ database: undefined }, 'no database');
  await q(c, 'SELECT DATABASE() AS db');
  await q(c, `USE ${DB}`);
  await q(c, 'SELECT DATABASE() AS db');
  await end(c);
});

scenario('change_user', ['rw', 'ro'], async () => {
  const c = await connect();
  await q(c, "SET @cu = 'before change'");
  if (RW) await q(c, 'CREATE TEMPORARY TABLE tmp_cu (id INT)');
  await q(c, 'SELECT SUBSTRING_INDEX(CURRENT_USER(), \'@\', 1) AS user, DATABASE() AS db, @cu AS cu');
  const cu = async (label, o) => {
    p(`> changeUser ${label}`);
    const r = await call(c, (cb) => c.changeUser(o, cb));
    p(r.err ? errStr(r.err) : 'ok');
    breakOn(c, r.err);
  };
  await cu('to CB_USER2', { user: USER2, password: PASSWORD2, database: DB });
  await q(c, 'SELECT SUBSTRING_INDEX(CURRENT_USER(), \'@\', 1) AS user, DATABASE() AS db, @cu AS cu');
  if (RW) await q(c, 'SELECT * FROM tmp_cu');
  await q(c, 'SELECT id, s FROM t ORDER BY id', undefined, { noMeta: true });
  await x(c, 'SELECT id, s FROM t WHERE id = ?', [2], { noMeta: true });
  await q(c, 'SELECT COUNT(*) FROM mysql.user');
  await cu('back to CB_USER', { user: USER, password: PASSWORD, database: DB });
  await q(c, 'SELECT SUBSTRING_INDEX(CURRENT_USER(), \'@\', 1) AS user, DATABASE() AS db');
  await cu('same user, charset latin1', { user: USER, password: PASSWORD, database: DB, charset: 'latin1_swedish_ci' });
  await q(c, 'SELECT @@character_set_client AS csc, id, s FROM l1 WHERE id = 1');
  await q(c, "SET @cu2 = 'set before the failed change'");
  p('> changeUser with a wrong password');
  const bad = await call(c, (cb) => c.changeUser({ user: USER2, password: 'wrong-password', database: DB }, cb));
  p(bad.err ? errStr(bad.err) : 'ok?!');
  // mysql2 flags the error fatal; what the server (or sluice) does with the session afterwards
  // is what the next statement shows
  await q(c, "SELECT 1 AS after_failed_change_user, SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AS user, DATABASE() AS db, @cu2 AS cu2");
  await end(c);
});

scenario('reset_connection', ['rw', 'ro'], async () => {
  const c = await connect();
  await q(c, "SET @r = 'kept?', @@session.sql_mode = 'ANSI_QUOTES', time_zone = '+03:00'");
  if (RW) {
    await q(c, 'CREATE TEMPORARY TABLE tmp_reset (id INT)');
    await q(c, 'INSERT INTO tmp_reset VALUES (1)');
    await q(c, 'BEGIN');
    await q(c, "INSERT INTO tx VALUES (60, 'open at reset')");
  }
  await x(c, 'SELECT @r AS r, ? AS p', ['prepared before reset'], { noMeta: true });
  await q(c, 'SELECT @r AS r, @@session.sql_mode AS mode, @@time_zone AS tz, @@in_transaction AS in_tx');
  p(`> reset() ${typeof c.reset === 'function' ? '(COM_RESET_CONNECTION)' : 'not available'}`);
  if (typeof c.reset === 'function') {
    const r = await call(c, (cb) => c.reset(cb));
    p(r.err ? errStr(r.err) : 'ok');
    breakOn(c, r.err);
  }
  await q(c, 'SELECT @r AS r, @@session.sql_mode = @@global.sql_mode AS mode_reset, @@time_zone AS tz, @@in_transaction AS in_tx');
  if (RW) {
    await q(c, 'SELECT * FROM tmp_reset');
    await q(c, 'SELECT COUNT(*) AS n60 FROM tx WHERE id = 60');
  }
  await x(c, 'SELECT @r AS r, ? AS p', ['prepared after reset'], { noMeta: true });
  await q(c, 'SELECT SUBSTRING_INDEX(CURRENT_USER(), \'@\', 1) AS user, DATABASE() AS db');
  p('> ping()');
  const pr = await call(c, (cb) => c.ping(cb));
  p(pr.err ? errStr(pr.err) : 'ok');
  await end(c);
});

scenario('pool', ['rw', 'ro'], async () => {
  const pool = mysql.createPool(baseOptions({ connectionLimit: 2, waitForConnections: true, queueLimit: 0, maxIdle: 2 }));
  pool.on('error', (e) => p(`pool error event: ${errStr(e)}`));
  try {
    const g1 = await call(null, (cb) => pool.getConnection(cb));
    if (g1.err) {
      p(`getConnection: ${errStr(g1.err)}`);
      return;
    }
    const c1 = g1.a;
    p('getConnection 1: ok');
    await q(c1, "SET @pool = 'c1'");
    await q(c1, 'SELECT @pool AS pool, COUNT(*) AS n FROM t');
    const g2 = await call(null, (cb) => pool.getConnection(cb));
    p(`getConnection 2: ${g2.err ? errStr(g2.err) : 'ok'}`);
    if (!g2.err) {
      await q(g2.a, 'SELECT @pool AS pool_on_c2');
      g2.a.release();
      p('release 2');
    }
    c1.release();
    p('release 1');
    p('> pool.query');
    const pq = await call(null, (cb) => pool.query({ sql: 'SELECT id, s FROM t ORDER BY id', rowsAsArray: true, timeout: TIMEOUT }, cb));
    if (pq.err) p(errStr(pq.err));
    else printResults(pq.a, pq.b, { noMeta: true });
    p('> pool.execute');
    const px = await call(null, (cb) => pool.execute({ sql: 'SELECT id, s FROM t WHERE id = ?', rowsAsArray: true, timeout: TIMEOUT }, [3], cb));
    if (px.err) p(errStr(px.err));
    else printResults(px.a, px.b, { noMeta: true });
    p('> pool.query error');
    const pe = await call(null, (cb) => pool.query({ sql: 'SELECT * FROM no_such_table', timeout: TIMEOUT }, cb));
    p(pe.err ? errStr(pe.err) : 'answered?!');
    p('> parallel pool.query x4 (2 connections)');
    const par = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        call(null, (cb) => pool.query({ sql: `SELECT ${i} AS i, SLEEP(0.05) AS z`, rowsAsArray: true, timeout: TIMEOUT }, cb))
      )
    );
    par.forEach((r, i) => p(`  [${i}] ${r.err ? errStr(r.err) : JSON.stringify(r.a)}`));
    if (RW) {
      p('> pool transaction on one connection');
      const g = await call(null, (cb) => pool.getConnection(cb));
      if (!g.err) {
        const pc = g.a;
        const b = await call(pc, (cb) => pc.beginTransaction(cb));
        p(`beginTransaction: ${b.err ? errStr(b.err) : headerStr(b.a)}`);
        await q(pc, "INSERT INTO tx VALUES (70, 'pool tx')");
        const rb = await call(pc, (cb) => pc.rollback(cb));
        p(`rollback: ${rb.err ? errStr(rb.err) : headerStr(rb.a)}`);
        await q(pc, 'SELECT COUNT(*) AS n70 FROM tx WHERE id = 70');
        pc.release();
      }
    }
  } finally {
    const e = await call(null, (cb) => pool.end(cb));
    p(`pool.end: ${e.err ? errStr(e.err) : 'ok'}`);
  }
});

// ---------------------------------------------------------------- CB_MODE=isolation

// Client A sets every kind of session state and goes idle or leaves; client B opens and prints
// what it sees (the server's defaults, its own); A prints its own state again. Directly two
// server connections; through sluice at pool max_per_node 1 one node connection
// (scripts/client-isolation.sh). mysql2's execute() is the binary prepared statement (cached per
// connection by the driver, so A's second execute reuses A's statement id).

const ISO_PROBE =
  'SELECT DATABASE() AS db, @@session.sql_mode AS sql_mode, ' +
  '@@session.max_statement_time AS max_statement_time, @@character_set_client AS cs_client, ' +
  '@@character_set_connection AS cs_connection, @@character_set_results AS cs_results, ' +
  '@@collation_connection AS collation, @@session.tx_isolation AS isolation, ' +
  '@@session.time_zone AS time_zone, @@autocommit AS autocommit, @@in_transaction AS in_tx, ' +
  '@cb_iso_s AS uv_s, @cb_iso_n AS uv_n, LAST_INSERT_ID() AS last_id';

function isoPrint(r) {
  if (r.err) {
    p(`  error ${r.err.errno} ${r.err.sqlState} ${r.err.sqlMessage !== undefined ? r.err.sqlMessage : r.err.message}`);
    return;
  }
  if (Array.isArray(r.a)) {
    for (const row of r.a) {
      for (const [k, v] of Object.entries(row)) p(`  ${k}=${v === null ? 'NULL' : Buffer.isBuffer(v) ? v.toString('utf8') : String(v)}`);
    }
  } else {
    p(`  ok affected=${r.a.affectedRows} insertId=${r.a.insertId}`);
  }
}

async function isoQ(conn, sql) {
  const r = await call(conn, (cb) => conn.query(sql, cb));
  isoPrint(r);
  breakOn(conn, r.err);
}

async function isoExec(conn, sql, args) {
  const r = await call(conn, (cb) => conn.execute(sql, args, cb));
  isoPrint(r);
  breakOn(conn, r.err);
}

async function isoStep(label, fn) {
  p(`-- ${label}`);
  try {
    await fn();
  } catch (e) {
    if (e instanceof Broken) throw e;
    p(`  exception: ${e && e.message}`);
  }
}

async function isoSet(a) {
  await isoStep('A sets database, charset, session variables, isolation, time zone, user variables', async () => {
    await isoQ(a, `USE ${DB}`);
    await isoQ(a, 'SET NAMES latin1');
    await isoQ(a, "SET SESSION sql_mode = 'ANSI_QUOTES,NO_ZERO_DATE', max_statement_time = 7");
    await isoQ(a, 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
    await isoQ(a, "SET time_zone = '+03:00'");
    await isoQ(a, "SET @cb_iso_s = 'A-string', @cb_iso_n = 42");
  });
  await isoStep('A autocommit off, an insert (LAST_INSERT_ID), commit', async () => {
    await isoQ(a, 'SET autocommit = 0');
    await isoQ(a, "INSERT INTO cb_iso_t (v) VALUES ('A')");
    const r = await call(a, (cb) => a.commit(cb));
    if (r.err) isoPrint(r);
  });
}

async function isoIdle() {
  p('== mysql2 isolation idle');
  const a = await connect({ database: undefined });
  await isoSet(a);
  await isoStep('A prepares a binary statement', () => isoExec(a, 'SELECT ? + 1 AS p', [41]));
  await isoStep('A probe', () => isoQ(a, ISO_PROBE));
  await isoQ(a, 'COMMIT');
  const b = await connect({ database: undefined });
  await isoStep('B probe (defaults)', () => isoQ(b, ISO_PROBE));
  await isoStep('B warnings', () => isoQ(b, 'SHOW WARNINGS'));
  await isoStep('B sets its own', async () => {
    await isoQ(b, "SET time_zone = '-02:00', sql_mode = ''");
    await isoQ(b, "SET @cb_iso_s = 'B-string'");
    await isoExec(b, 'SELECT ? * 2 AS p', [21]);
    await isoQ(b, ISO_PROBE);
  });
  await isoStep('A probe again', () => isoQ(a, ISO_PROBE));
  await isoStep('A executes its statement again', () => isoExec(a, 'SELECT ? + 1 AS p', [99]));
  await isoStep('A reads its table', () => isoQ(a, 'SELECT v FROM cb_iso_t ORDER BY id'));
  await isoQ(a, 'COMMIT');
  await call(b, (cb) => b.end(cb));
  await call(a, (cb) => a.end(cb));
}

async function isoAfter() {
  const b = await connect({ database: undefined });
  await isoStep('B warnings', () => isoQ(b, 'SHOW WARNINGS'));
  await isoStep('B probe (defaults)', () => isoQ(b, ISO_PROBE));
  await isoStep("B reads A's temporary table", () => isoQ(b, `SELECT a FROM ${DB}.cb_iso_tmp`));
  await isoStep("B takes A's lock", async () => {
    await isoQ(b, "SELECT GET_LOCK('cb_iso_lock', 10) AS got");
    await isoQ(b, "SELECT RELEASE_LOCK('cb_iso_lock') AS released");
  });
  await isoStep("B executes A's SQL prepared statement", () => isoQ(b, 'EXECUTE cb_iso_p'));
  await isoStep("B reads A's uncommitted row", () =>
    isoQ(b, `SELECT COUNT(*) AS n FROM ${DB}.cb_iso_t WHERE v = 'A-uncommitted'`)
  );
  await call(b, (cb) => b.end(cb));
}

async function isoLeave() {
  p('== mysql2 isolation leave');
  const a = await connect({ database: undefined });
  await isoSet(a);
  await isoStep('A pins: temporary table, GET_LOCK, SQL PREPARE, binary prepare', async () => {
    await isoQ(a, 'CREATE TEMPORARY TABLE cb_iso_tmp (a INT)');
    await isoQ(a, 'INSERT INTO cb_iso_tmp VALUES (1)');
    await isoQ(a, "SELECT GET_LOCK('cb_iso_lock', 0) AS got");
    await isoQ(a, "PREPARE cb_iso_p FROM 'SELECT 1 AS one'");
    await isoExec(a, 'SELECT ? + 1 AS p', [1]);
  });
  await isoStep('A opens a transaction, inserts, warns', async () => {
    await isoQ(a, 'SET autocommit = 1');
    const r = await call(a, (cb) => a.beginTransaction(cb));
    if (r.err) isoPrint(r);
    await isoQ(a, "INSERT INTO cb_iso_t (v) VALUES ('A-uncommitted')");
    await isoQ(a, "SELECT CAST('1x' AS SIGNED) AS w");
    await isoQ(a, 'SHOW WARNINGS');
    await isoQ(a, ISO_PROBE);
  });
  await call(a, (cb) => a.end(cb));
  await isoAfter();
}

async function isoLocked() {
  p('== mysql2 isolation locked');
  const a = await connect();
  await isoStep('A LOCK TABLES, insert', async () => {
    await isoQ(a, 'LOCK TABLES cb_iso_t WRITE');
    await isoQ(a, "INSERT INTO cb_iso_t (v) VALUES ('A-locked')");
  });
  await call(a, (cb) => a.end(cb));
  const b = await connect();
  await isoStep('B writes the table', async () => {
    await isoQ(b, 'SET SESSION lock_wait_timeout = 10');
    await isoQ(b, "INSERT INTO cb_iso_t (v) VALUES ('B-after-lock')");
    await isoQ(b, 'SELECT v FROM cb_iso_t ORDER BY id');
  });
  await call(b, (cb) => b.end(cb));
}

async function isolation() {
  p('# node mysql2 isolation');
  {
    // Quiet: whether the table existed before differs between runs (a note).
    const c = await connect();
    await call(c, (cb) => c.query('DROP TABLE IF EXISTS cb_iso_t', cb));
    const r = await call(c, (cb) => c.query('CREATE TABLE cb_iso_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))', cb));
    if (r.err) isoPrint(r);
    await call(c, (cb) => c.end(cb));
  }
  const rounds = (process.env.CB_ROUNDS || 'idle leave locked').split(/[\s,]+/).filter(Boolean);
  const fns = { idle: isoIdle, leave: isoLeave, locked: isoLocked };
  for (const r of rounds) {
    if (!fns[r]) throw new Error(`CB_ROUNDS: unknown round '${r}'`);
    try {
      await fns[r]();
    } catch (e) {
      if (e instanceof Broken) p(`!! round aborted: ${e.message}`);
      else throw e;
    }
    destroyAll();
    flush();
  }
}

// ---------------------------------------------------------------- main

// ownErrors: CB_MODE=errors, an error sluice raises itself (scripts/client-batteries.sh's errors
// phase). mysql2 connects and runs CB_SQL, and prints one line: 'mysql2: ok' or
// 'mysql2: error CODE STATE MESSAGE', the login's error included.
async function ownErrors(sql) {
  const c = mysql.createConnection(baseOptions());
  c.on('error', () => {});
  let r = await call(c, (cb) => c.connect(cb));
  if (!r.err) r = await call(c, (cb) => c.query(sql, cb));
  c.destroy();
  const e = r.err;
  if (!e) p('mysql2: ok');
  else p(`mysql2: error ${e.errno} ${e.sqlState || '?'} ${e.sqlMessage !== undefined ? e.sqlMessage : e.message}`);
}

async function main() {
  if (MODE === 'errors') {
    await ownErrors(env('CB_SQL'));
    return;
  }
  if (MODE === 'isolation') {
    await isolation();
    return;
  }
  // the battery cannot run at all when the first connection fails
  {
    const c = mysql.createConnection(baseOptions());
    c.on('error', () => {});
    const r = await call(c, (cb) => c.connect(cb));
    if (r.err) {
      process.stderr.write(`battery: cannot connect to ${HOST}:${PORT}: ${errStr(r.err)}\n`);
      process.exit(2);
    }
    c.destroy();
  }
  p(`# node mysql2 battery, mode ${MODE}`);
  // CB_ONLY=name,name: run only these scenarios (for debugging the battery)
  const only = (process.env.CB_ONLY || '').split(',').filter(Boolean);
  for (const s of scenarios) {
    if (!s.modes.includes(MODE)) continue;
    if (only.length && !only.includes(s.name)) continue;
    p(`== ${s.name}`);
    const t0 = Date.now();
    try {
      await s.fn();
    } catch (e) {
      if (e instanceof Broken) p(`!! scenario aborted: ${e.message}`);
      else p(`!! scenario aborted by an exception: ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    }
    destroyAll();
    process.stderr.write(`${s.name}: ${Date.now() - t0} ms\n`);
    flush();
  }
  flush();
}

process.on('unhandledRejection', (e) => {
  p(`!! unhandled rejection: ${e && e.message}`);
});

main().then(
  () => {
    flush();
    process.exit(0);
  },
  (e) => {
    flush();
    process.stderr.write(`battery: ${e && e.stack}\n`);
    process.exit(1);
  }
);
