<?php
// The shared tables and procedures, (re)created at the start of the rw run. The ro run reads them.
declare(strict_types=1);

const TYPES_COLUMNS = 'id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, de, de0, fl, db, b1, b64, d, t, t6, dt, dt6, ts, y, '
    . 'c, vc, tx, bl, bn, vb, e, st, j, g';

function schema_sql(): array
{
    return [
        'DROP PROCEDURE IF EXISTS p_multi',
        'DROP PROCEDURE IF EXISTS p_out',
        'DROP PROCEDURE IF EXISTS p_cursor',
        'DROP PROCEDURE IF EXISTS p_cursor_loop',
        'DROP TABLE IF EXISTS t_types, t_cs, t_big, t',
        "CREATE TABLE t_types (
            id INT NOT NULL PRIMARY KEY,
            ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
            mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
            bi BIGINT, biu BIGINT UNSIGNED, de DECIMAL(20,6), de0 DECIMAL(65,30),
            fl FLOAT, db DOUBLE, b1 BIT(1), b64 BIT(64),
            d DATE, t TIME, t6 TIME(6), dt DATETIME, dt6 DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, y YEAR,
            c CHAR(10), vc VARCHAR(100), tx TEXT, bl BLOB, bn BINARY(4), vb VARBINARY(10),
            e ENUM('a','b','c'), st SET('x','y','z'), j JSON, g GEOMETRY
        ) DEFAULT CHARSET=utf8mb4",
        // minima
        "INSERT INTO t_types VALUES (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0,
            -9223372036854775808, 0, -99999999999999.999999, -99999999999999999999999999999999999.999999999999999999999999999999,
            -3.40282e38, -1.7976931348623157e308, b'0', b'0',
            '1000-01-01', '-838:59:59', '-838:59:59.000000', '1000-01-01 00:00:00', '1000-01-01 00:00:00.000000',
            '1970-01-02 00:00:00.000', 1901,
            '', '', '', '', x'00000000', x'', 'a', '', '[]', ST_GeomFromText('POINT(0 0)'))",
        // maxima
        "INSERT INTO t_types VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,
            9223372036854775807, 18446744073709551615, 99999999999999.999999, 99999999999999999999999999999999999.999999999999999999999999999999,
            3.40282e38, 1.7976931348623157e308, b'1', b'1111111111111111111111111111111111111111111111111111111111111111',
            '9999-12-31', '838:59:59', '838:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999',
            '2038-01-18 03:14:07.999', 2155,
            'abcdefghij', REPEAT('v', 100), REPEAT('t', 300), x'00ff00ff', x'ffffffff', x'00010203040506070809',
            'c', 'x,y,z', '{\"k\": 1}', ST_GeomFromText('LINESTRING(0 0, 1 1, 2 4)'))",
        // ordinary values
        "INSERT INTO t_types VALUES (3, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5, 3.141593, -0.000000000000000000000000000001,
            0.1, 0.1, b'1', b'1010',
            '2024-02-29', '12:34:56', '-00:00:01.500000', '2024-02-29 12:34:56', '2024-02-29 12:34:56.123456',
            '2024-02-29 12:34:56.789', 2024,
            'héllo', 'wörld 😀 \\\\ '' \"', 'text ñ', x'deadbeef', x'0102', x'41', 'b', 'y',
            '{\"a\": [1, 2.5, \"x\", null, true, false], \"b\": {\"c\": \"é😀\"}, \"n\": 12345678901234567890}',
            ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0))'))",
        // NULL in every column
        'INSERT INTO t_types (id) VALUES (4)',
        // zero dates (allowed by MariaDB 10.11 default sql_mode)
        "INSERT INTO t_types (id, d, dt, dt6, ts, y, t) VALUES (5, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', 0, '00:00:00')",
        "CREATE TABLE t_cs (id INT NOT NULL PRIMARY KEY, u VARCHAR(50) CHARACTER SET utf8mb4, l VARCHAR(50) CHARACTER SET latin1) DEFAULT CHARSET=utf8mb4",
        "INSERT INTO t_cs VALUES (1, 'héllo wörld', 'héllo wörld'), (2, '😀 emoji 🎉', 'no emoji'), (3, 'Ελληνικά 日本語', 'façade €'), (4, NULL, NULL)",
        'CREATE TABLE t_big (id INT NOT NULL PRIMARY KEY, b LONGBLOB, tx LONGTEXT) DEFAULT CHARSET=utf8mb4',
        'CREATE TABLE t (s VARCHAR(20) NOT NULL PRIMARY KEY) DEFAULT CHARSET=utf8mb4',
        "INSERT INTO t VALUES ('pear'), ('apple'), ('fig')",
        "CREATE PROCEDURE p_multi(IN n INT)
         BEGIN
           SELECT n AS n, 'first' AS which;
           SELECT s FROM t ORDER BY s;
           UPDATE t SET s = s WHERE 1 = 0;
           SELECT n * 2 AS doubled, CAST(n AS CHAR) AS txt;
         END",
        "CREATE PROCEDURE p_out(IN a INT, OUT b VARCHAR(20), INOUT c INT)
         BEGIN
           SET b = CONCAT('out-', a);
           SET c = c * 10 + a;
           SELECT a AS a_in, c AS c_now;
         END",
        "CREATE PROCEDURE p_cursor()
         BEGIN
           DECLARE v VARCHAR(20);
           DECLARE c CURSOR FOR SELECT s FROM t ORDER BY s;
           OPEN c; FETCH c INTO v; CLOSE c;
           SELECT v;
         END",
        "CREATE PROCEDURE p_cursor_loop(OUT n INT, OUT joined VARCHAR(200))
         BEGIN
           DECLARE done INT DEFAULT 0;
           DECLARE v VARCHAR(20);
           DECLARE c CURSOR FOR SELECT s FROM t ORDER BY s;
           DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
           SET n = 0; SET joined = '';
           OPEN c;
           l: LOOP
             FETCH c INTO v;
             IF done THEN LEAVE l; END IF;
             SET n = n + 1; SET joined = CONCAT(joined, v, ',');
           END LOOP;
           CLOSE c;
         END",
    ];
}

function setup_schema(): void
{
    $m = my_connect();
    foreach (schema_sql() as $sql) {
        $first = strtok(trim(preg_replace('/\s+/', ' ', $sql)), '(');
        try {
            $m->query($sql);
            if (str_starts_with($first, 'DROP')) {
                continue; // its warning count depends on whether an earlier run left the object
            }
            out(sprintf('  %s: affected_rows=%s warning_count=%d', substr($first, 0, 40), $m->affected_rows, $m->warning_count));
        } catch (Throwable $e) {
            out(sprintf('  %s: %s', substr($first, 0, 40), fmt_exc($e)));
        }
    }
    $m->close();
}
