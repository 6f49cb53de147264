// Battery.java: the Java client battery (MariaDB Connector/J 2.7) for scripts/client-batteries.sh.
// See tests/clients/README.md for the contract and README.md next to this file for what it covers.
// Every scenario prints what the driver hands back (values with their Java types, column metadata,
// update counts, generated keys, warnings, errors as class/code/SQLSTATE/message) in a form that
// does not depend on the server's connection ids, ports or clock.

import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.sql.BatchUpdateException;
import java.sql.Blob;
import java.sql.CallableStatement;
import java.sql.Clob;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.JDBCType;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.TimeZone;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

public class Battery {
  // Socket read timeout of every connection: a hang in the proxy becomes a printed error.
  static final int SOCKET_TIMEOUT_MS = 20000;
  // The cursor procedures hang through the proxy today (known bug (d)): their connections use a
  // shorter read timeout, so that the five calls do not cost 100 s.
  static final int CURSOR_TIMEOUT_MS = 10000;
  static final int BIG = 17 * 1024 * 1024;

  static PrintStream out;
  static String host, port, user, pass, user2, pass2, db, work;
  static boolean rw;

  interface Body {
    void run() throws Exception;
  }

  interface SqlBody {
    void run() throws SQLException;
  }

  public static void main(String[] args) throws Exception {
    TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
    Locale.setDefault(Locale.ROOT);
    out =
        new PrintStream(
            new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16),
            false,
            StandardCharsets.UTF_8);
    host = env("CB_HOST");
    port = env("CB_PORT");
    user = env("CB_USER");
    pass = System.getenv().getOrDefault("CB_PASSWORD", "");
    user2 = env("CB_USER2");
    pass2 = System.getenv().getOrDefault("CB_PASSWORD2", "");
    db = env("CB_DB");
    work = env("CB_WORK");
    String mode = env("CB_MODE");
    if (!List.of("rw", "ro", "errors", "isolation").contains(mode)) {
      System.err.println("java battery: CB_MODE must be rw, ro, errors or isolation, not " + mode);
      System.exit(2);
    }
    rw = mode.equals("rw");
    if (!host.equals("127.0.0.1") && !host.equals("localhost")) {
      System.err.println("java battery: refusing to connect to " + host + " (127.0.0.1 only)");
      System.exit(2);
    }
    Class.forName("org.mariadb.jdbc.Driver");
    if (mode.equals("errors")) {
      ownErrors(env("CB_SQL"));
      out.flush();
      System.exit(0);
    }
    if (mode.equals("isolation")) {
      Isolation.run();
      out.flush();
      System.exit(0);
    }
    try (Connection c = open("", user, pass)) {
      // reachable
    } catch (SQLException e) {
      System.err.println("java battery: cannot connect to " + host + ":" + port + ": " + errText(e));
      System.exit(2);
    }
    out.println("# java battery, Connector/J, mode " + mode);

    if (rw) scenario("setup", Battery::setup);
    scenario("types: text protocol (Statement)", () -> typesText());
    scenario("types: binary protocol (server-side PreparedStatement)", () -> typesPrepared(true));
    scenario("types: client-side PreparedStatement", () -> typesPrepared(false));
    scenario("literals: text and binary protocol", Battery::literals);
    scenario("parameters: server-side and client-side binding", Battery::parameters);
    if (rw) {
      scenario("dml: OK packets, affected rows, insert ids", Battery::dml);
      scenario("dml: useAffectedRows=true", Battery::dmlAffectedRows);
    }
    scenario("warnings", Battery::warnings);
    if (rw) scenario("batches: executeBatch", Battery::batches);
    scenario("transactions", Battery::transactions);
    scenario("multi-statements and multiple result sets", Battery::multiStatements);
    if (rw) {
      scenario("procedures: result sets, OUT/INOUT, functions", Battery::procedures);
      scenario("procedures: cursors", Battery::cursorProcedures);
    }
    scenario("variables: user and session", Battery::variables);
    scenario("charsets", Battery::charsets);
    scenario("errors and error-then-continue", Battery::errors);
    scenario("big values (17 MiB)", Battery::bigValues);
    if (rw) scenario("load data local infile", Battery::loadData);
    scenario("reconnect, reset connection, second user", Battery::sessionState);
    scenario("jdbc:mysql: scheme", Battery::mysqlScheme);
    scenario("database metadata", Battery::databaseMetadata);
    scenario("query timeout and cancel", Battery::timeoutAndCancel);
    scenario("compression", Battery::compression);
    out.println("# done");
    out.flush();
    System.exit(0);
  }

  // ---------------------------------------------------------------- plumbing

  static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) {
      System.err.println("java battery: " + name + " is not set");
      System.exit(2);
    }
    return v;
  }

  static String url(String scheme, String opts, int socketTimeout) {
    return "jdbc:"
        + scheme
        + "://"
        + host
        + ":"
        + port
        + "/"
        + db
        + "?socketTimeout="
        + socketTimeout
        + "&connectTimeout=10000"
        + (opts.isEmpty() ? "" : "&" + opts);
  }

  static Connection open(String opts, String u, String p) throws SQLException {
    return open("mariadb", opts, u, p, SOCKET_TIMEOUT_MS);
  }

  static Connection open(String scheme, String opts, String u, String p, int timeout)
      throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", u);
    props.setProperty("password", p);
    return DriverManager.getConnection(url(scheme, opts, timeout), props);
  }

  /** A connection that is opened again (and says so) when an error closed it. */
  static class Sess implements AutoCloseable {
    final String opts, u, p;
    final int timeout;
    Connection c;

    Sess(String opts) {
      this(opts, user, pass, SOCKET_TIMEOUT_MS);
    }

    Sess(String opts, String u, String p, int timeout) {
      this.opts = opts;
      this.u = u;
      this.p = p;
      this.timeout = timeout;
    }

    Connection c() throws SQLException {
      if (c != null && c.isClosed()) {
        out.println("  -- connection closed by the last error; opening a new one");
        c = null;
      }
      if (c == null) c = open("mariadb", opts, u, p, timeout);
      return c;
    }

    public void close() {
      if (c != null) {
        try {
          c.close();
        } catch (Exception e) {
          // closing a broken connection
        }
      }
      c = null;
    }
  }

  static void scenario(String name, Body body) {
    out.println();
    out.println("== " + name);
    long t0 = System.nanoTime();
    try {
      body.run();
    } catch (Throwable t) {
      out.println("  SCENARIO ABORTED: " + errText(t));
    }
    out.flush();
    // timings go to stderr: they differ from run to run
    System.err.printf("java battery: %-60s %6d ms%n", name, (System.nanoTime() - t0) / 1000000);
  }

  /** Runs one step; an exception is printed as a result. */
  static void step(String label, SqlBody body) {
    if (label != null) out.println("-- " + label);
    try {
      body.run();
    } catch (SQLException e) {
      out.println("  ERROR " + errText(e));
    } catch (RuntimeException e) {
      out.println("  ERROR " + errText(e));
    }
  }

  /**
   * CB_MODE=errors: an error sluice raises itself (scripts/client-batteries.sh's errors phase).
   * Connector/J connects and runs sql, and prints one line: 'connectorj: ok' or 'connectorj: error
   * CODE STATE MESSAGE', the login's error included.
   */
  static void ownErrors(String sql) {
    try (Connection c = open("", user, pass);
        Statement st = c.createStatement()) {
      st.execute(sql);
      out.println("connectorj: ok");
    } catch (SQLException e) {
      out.println(
          "connectorj: error " + e.getErrorCode() + " " + e.getSQLState() + " " + clean(e.getMessage()));
    }
  }

  static final Pattern CONN_ID = Pattern.compile("\\(conn=\\d+\\)\\s*");

  static String clean(String msg) {
    if (msg == null) return "null";
    String s = CONN_ID.matcher(msg).replaceAll("");
    s = s.replace(work, "$CB_WORK");
    s = s.replace("(port=" + port + ")", "(port=PORT)").replace(":" + port, ":PORT");
    return s.replace("\r", "").replace("\n", " | ");
  }

  static String errText(Throwable t) {
    StringBuilder b = new StringBuilder();
    b.append(t.getClass().getSimpleName());
    if (t instanceof SQLException) {
      SQLException e = (SQLException) t;
      b.append(" code=").append(e.getErrorCode()).append(" state=").append(e.getSQLState());
    }
    b.append(": ").append(clean(t.getMessage()));
    if (t instanceof BatchUpdateException) {
      b.append(" updateCounts=")
          .append(Arrays.toString(((BatchUpdateException) t).getUpdateCounts()));
    }
    String last = t.getMessage();
    Throwable c = t.getCause();
    for (int depth = 0; c != null && depth < 4; depth++, c = c.getCause()) {
      if (c.getMessage() != null && last != null && last.contains(c.getMessage())) continue;
      b.append(" / cause ").append(c.getClass().getSimpleName()).append(": ").append(clean(c.getMessage()));
      last = c.getMessage();
    }
    return b.toString();
  }

  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) s.append(String.format("%02X", x & 0xff));
    return s.toString();
  }

  static String sha(byte[] b) {
    try {
      return hex(MessageDigest.getInstance("SHA-256").digest(b)).toLowerCase(Locale.ROOT);
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch == '"' || ch == '\\') b.append('\\').append(ch);
      else if (ch < 0x20 || ch == 0x7f) b.append(String.format("\\x%02x", (int) ch));
      else b.append(ch);
    }
    return b.append('"').toString();
  }

  static String str(String s) {
    if (s == null) return "NULL";
    if (s.length() > 120) {
      return "[" + s.length() + " chars] sha256=" + sha(s.getBytes(StandardCharsets.UTF_8));
    }
    return quote(s);
  }

  static String val(Object o) {
    if (o == null) return "NULL";
    try {
      if (o instanceof byte[]) {
        byte[] b = (byte[]) o;
        return "byte[" + b.length + "]" + (b.length <= 48 ? " 0x" + hex(b) : " sha256=" + sha(b));
      }
      if (o instanceof String) return "String " + str((String) o);
      if (o instanceof Blob) {
        Blob bl = (Blob) o;
        return "Blob " + val(bl.getBytes(1, (int) bl.length()));
      }
      if (o instanceof Clob) {
        Clob cl = (Clob) o;
        return "Clob " + str(cl.getSubString(1, (int) cl.length()));
      }
      if (o instanceof BigDecimal) return "BigDecimal " + ((BigDecimal) o).toPlainString();
    } catch (SQLException e) {
      return o.getClass().getSimpleName() + " ERROR " + errText(e);
    }
    return o.getClass().getSimpleName() + " " + o;
  }

  static String jdbcName(int t) {
    try {
      return JDBCType.valueOf(t).getName();
    } catch (IllegalArgumentException e) {
      return "type" + t;
    }
  }

  interface MdGet {
    Object get() throws SQLException;
  }

  static String md(MdGet g) {
    try {
      return String.valueOf(g.get());
    } catch (SQLException | RuntimeException e) {
      return "ERR(" + e.getClass().getSimpleName() + ")";
    }
  }

  static void printMeta(ResultSetMetaData m, String indent) throws SQLException {
    int n = m.getColumnCount();
    for (int i = 1; i <= n; i++) {
      final int k = i;
      out.println(
          indent
              + "col "
              + k
              + " "
              + md(() -> m.getColumnLabel(k))
              + ": name="
              + md(() -> m.getColumnName(k))
              + " table="
              + md(() -> m.getTableName(k))
              + " type="
              + md(() -> m.getColumnTypeName(k))
              + " jdbc="
              + md(() -> jdbcName(m.getColumnType(k)))
              + " class="
              + md(() -> m.getColumnClassName(k))
              + " precision="
              + md(() -> m.getPrecision(k))
              + " scale="
              + md(() -> m.getScale(k))
              + " size="
              + md(() -> m.getColumnDisplaySize(k))
              + " nullable="
              + md(() -> m.isNullable(k))
              + " signed="
              + md(() -> m.isSigned(k))
              + " autoinc="
              + md(() -> m.isAutoIncrement(k)));
    }
  }

  /** Prints a result set: its metadata, then every row, every column as getObject and getString. */
  static void dump(ResultSet rs) throws SQLException {
    ResultSetMetaData m = rs.getMetaData();
    int n = m.getColumnCount();
    out.println("  columns: " + n);
    printMeta(m, "    ");
    int row = 0;
    while (rs.next()) {
      row++;
      out.println("    row " + row + ":");
      for (int i = 1; i <= n; i++) {
        String o, s;
        try {
          o = val(rs.getObject(i));
        } catch (SQLException | RuntimeException e) {
          o = "ERROR " + errText(e);
        }
        try {
          s = str(rs.getString(i));
        } catch (SQLException | RuntimeException e) {
          s = "ERROR " + errText(e);
        }
        out.println("      " + i + " " + label(m, i) + " = " + o + " | getString " + s);
      }
    }
    out.println("  rows: " + row);
  }

  static String label(ResultSetMetaData m, int i) {
    return md(() -> m.getColumnLabel(i));
  }

  static void warnings(Statement st) throws SQLException {
    SQLWarning w = st.getWarnings();
    int n = 0;
    for (; w != null; w = w.getNextWarning()) {
      n++;
      out.println(
          "  warning code="
              + w.getErrorCode()
              + " state="
              + w.getSQLState()
              + ": "
              + clean(w.getMessage()));
    }
    out.println("  warnings: " + n);
    st.clearWarnings();
  }

  /** Prints every result of an executed statement: result sets and update counts, in order. */
  static void results(Statement st, boolean isRs) throws SQLException {
    for (int idx = 1; idx <= 64; idx++) {
      if (isRs) {
        out.println("  result " + idx + ": result set");
        try (ResultSet rs = st.getResultSet()) {
          dump(rs);
        }
      } else {
        int uc = st.getUpdateCount();
        if (uc == -1) {
          out.println("  end of results");
          return;
        }
        out.println("  result " + idx + ": update count " + uc);
      }
      isRs = st.getMoreResults();
    }
    out.println("  (more than 64 results, stopped)");
  }

  static String abbrev(String sql) {
    String s = sql.replace("\n", " ");
    return s.length() > 160 ? s.substring(0, 157) + "..." : s;
  }

  /** Statement.execute (text protocol) and every result it returns, then its warnings. */
  static void q(Sess s, String sql) {
    step(null, () -> {
      out.println("> " + abbrev(sql));
      try (Statement st = s.c().createStatement()) {
        boolean isRs = st.execute(sql);
        results(st, isRs);
        warnings(st);
      }
    });
  }

  /** executeUpdate with RETURN_GENERATED_KEYS: the count, the keys, the warnings. */
  static void upd(Sess s, String sql) {
    step(null, () -> {
      out.println("> " + abbrev(sql));
      try (Statement st = s.c().createStatement()) {
        int n = st.executeUpdate(sql, Statement.RETURN_GENERATED_KEYS);
        out.println("  update count " + n + ", generated keys " + keys(st));
        warnings(st);
      }
    });
  }

  static String keys(Statement st) throws SQLException {
    List<String> k = new ArrayList<>();
    try (ResultSet rs = st.getGeneratedKeys()) {
      while (rs.next()) k.add(String.valueOf(rs.getObject(1)));
    }
    return k.toString();
  }

  /** Executes a prepared statement (already bound) and prints its results. */
  static void exec(PreparedStatement ps) throws SQLException {
    boolean isRs = ps.execute();
    results(ps, isRs);
    warnings(ps);
  }

  /** prepareStatement + execute without parameters. */
  static void pq(Sess s, String sql) {
    step(null, () -> {
      out.println("> prepare: " + abbrev(sql));
      try (PreparedStatement ps = s.c().prepareStatement(sql)) {
        exec(ps);
      }
    });
  }

  static void quiet(Sess s, String... sqls) throws SQLException {
    try (Statement st = s.c().createStatement()) {
      for (String sql : sqls) st.execute(sql);
    }
  }

  // ---------------------------------------------------------------- setup

  static final String[] TYPE_COLUMNS = {
    "id INT PRIMARY KEY",
    "ti TINYINT", "tiu TINYINT UNSIGNED", "si SMALLINT", "siu SMALLINT UNSIGNED",
    "mi MEDIUMINT", "miu MEDIUMINT UNSIGNED", "i INT", "iu INT UNSIGNED",
    "bi BIGINT", "biu BIGINT UNSIGNED", "b1 TINYINT(1)",
    "dec1 DECIMAL(10,2)", "dec2 DECIMAL(65,30)", "f FLOAT", "d DOUBLE",
    "bit1 BIT(1)", "bit8 BIT(8)", "bit64 BIT(64)",
    "dt DATE", "tm TIME", "tm6 TIME(6)", "dtm DATETIME", "dtm6 DATETIME(6)",
    "ts TIMESTAMP(3) NULL DEFAULT NULL", "yr YEAR",
    "c CHAR(10)", "vc VARCHAR(100)", "tx TEXT", "bl BLOB", "bn BINARY(4)", "vb VARBINARY(10)",
    "en ENUM('a','b','c')", "st SET('x','y','z')", "js JSON", "g GEOMETRY", "pt POINT",
  };

  static final String[] TYPE_ROWS = {
    // minimums
    "(1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, 0,"
        + " -99999999.99, -99999999999999999999999999999999999.999999999999999999999999999999,"
        + " -3.40282e38, -1.7976931348623157e308, b'0', b'00000000', b'0',"
        + " '1000-01-01', '-838:59:59', '-838:59:59.000000', '1000-01-01 00:00:00',"
        + " '1000-01-01 00:00:00.000000', '1970-01-02 00:00:00.000', 1901,"
        + " '', '', '', '', X'00000000', '', 'a', '', '[]',"
        + " ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POINT(0 0)'))",
    // maximums
    "(2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,"
        + " 9223372036854775807, 18446744073709551615, 1,"
        + " 99999999.99, 99999999999999999999999999999999999.999999999999999999999999999999,"
        + " 3.40282e38, 1.7976931348623157e308, b'1', b'11111111', X'FFFFFFFFFFFFFFFF',"
        + " '9999-12-31', '838:59:59', '838:59:59.000000', '9999-12-31 23:59:59',"
        + " '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999', 2155,"
        + " 'ZZZZZZZZZZ', REPEAT('v', 100), REPEAT('t', 1000), X'00FF80', X'FFFFFFFF', X'00010203',"
        + " 'c', 'x,y,z', '{\"a\": [1, 2.5, \"x\"], \"b\": null, \"c\": {\"d\": true}}',"
        + " ST_GeomFromText('LINESTRING(0 0, 1 1, 2 3)'), ST_GeomFromText('POINT(-1.5 2.25)'))",
    // NULL in every column
    "(3" + ", NULL".repeat(36) + ")",
    // ordinary values, non-ASCII text
    "(4, 1, 2, -3, 4, -5, 6, -7, 8, -9, 10, 1, 3.14, 2.718281828459045235360287471352,"
        + " 1.5, -0.1, b'1', b'1010', b'101',"
        + " '2024-02-29', '12:34:56', '-00:00:01.500000', '2024-02-29 12:34:56',"
        + " '2024-02-29 12:34:56.123456', '2024-02-29 12:34:56.789', 2024,"
        + " 'héllo', 'Grüße 😀', 'ünïcödé text ✓', X'DEADBEEF', 'ab', 'xyz', 'b', 'x,z',"
        + " '{\"é\": \"😀\", \"n\": 1.5, \"list\": [true, false, null]}',"
        + " ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0))'), ST_GeomFromText('POINT(1 2)'))",
    // zero dates, empty SET
    "(5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'0', b'0', b'0',"
        + " '0000-00-00', '00:00:00', '00:00:00.000000', '0000-00-00 00:00:00',"
        + " '0000-00-00 00:00:00.000000', NULL, 0,"
        + " ' pad ', 'trailing  ', 'line1\\nline2\\ttab', X'00', X'41', X'', 'a', '', 'null',"
        + " NULL, NULL)",
  };

  static void setup() throws Exception {
    try (Sess s = new Sess("")) {
      String[] ddl = {
        "SET SESSION time_zone = '+00:00'",
        "DROP PROCEDURE IF EXISTS p_multi",
        "DROP PROCEDURE IF EXISTS p_out",
        "DROP PROCEDURE IF EXISTS p_out_rs",
        "DROP PROCEDURE IF EXISTS p_cursor",
        "DROP PROCEDURE IF EXISTS p_cursor_loop",
        "DROP FUNCTION IF EXISTS f_add",
        "DROP TABLE IF EXISTS t_types, t, t_dml, t_tx, t_big, t_load, t_cs, t_params",
        "CREATE TABLE t_types (" + String.join(", ", TYPE_COLUMNS) + ") DEFAULT CHARSET=utf8mb4",
        "INSERT INTO t_types VALUES " + String.join(", ", TYPE_ROWS),
        "CREATE TABLE t (s VARCHAR(20)) DEFAULT CHARSET=utf8mb4",
        "INSERT INTO t VALUES ('alpha'), ('beta'), ('gamma')",
        "CREATE TABLE t_dml (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(20) NOT NULL UNIQUE,"
            + " v INT, tiny TINYINT) DEFAULT CHARSET=utf8mb4",
        "CREATE TABLE t_tx (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
        "CREATE TABLE t_big (id INT PRIMARY KEY, lb LONGBLOB, lt LONGTEXT) DEFAULT CHARSET=utf8mb4",
        "CREATE TABLE t_load (id INT PRIMARY KEY, name VARCHAR(50), amount DECIMAL(10,2),"
            + " note VARCHAR(50)) DEFAULT CHARSET=utf8mb4",
        "CREATE TABLE t_cs (id INT PRIMARY KEY, u VARCHAR(50) CHARACTER SET utf8mb4,"
            + " l VARCHAR(50) CHARACTER SET latin1)",
        "INSERT INTO t_cs VALUES (1, 'héllo wörld ñ 😀🎉', 'héllo wörld ñ'), (2, 'Grüße', 'Grüße')",
        "CREATE TABLE t_params (id INT PRIMARY KEY, ti TINYINT, si SMALLINT, bi BIGINT,"
            + " biu BIGINT UNSIGNED, dec2 DECIMAL(30,10), f FLOAT, d DOUBLE, b1 TINYINT(1),"
            + " s VARCHAR(50), bl BLOB, dt DATE, tm TIME(6), ts DATETIME(6), ldt DATETIME(6),"
            + " ld DATE, lt TIME, js JSON, nul VARCHAR(10)) DEFAULT CHARSET=utf8mb4",
        "CREATE PROCEDURE p_multi(IN n INT) BEGIN SELECT n AS n, 'first' AS which;"
            + " SELECT s FROM t ORDER BY s; UPDATE t SET s = s WHERE s = 'none'; END",
        "CREATE PROCEDURE p_out(IN a INT, OUT b INT, INOUT c VARCHAR(40))"
            + " BEGIN SET b = a * 2; SET c = CONCAT(IFNULL(c, 'null'), '+', a); END",
        "CREATE PROCEDURE p_out_rs(IN a INT, OUT b DECIMAL(10,4))"
            + " BEGIN SELECT a AS a_in, 'rs' AS tag; SET b = a / 3; END",
        "CREATE PROCEDURE p_cursor() BEGIN DECLARE v VARCHAR(20);"
            + " DECLARE c CURSOR FOR SELECT s FROM t ORDER BY s;"
            + " OPEN c; FETCH c INTO v; CLOSE c; SELECT v; END",
        "CREATE PROCEDURE p_cursor_loop(OUT total INT, OUT joined VARCHAR(200)) BEGIN"
            + " DECLARE done INT DEFAULT 0; DECLARE v VARCHAR(20);"
            + " DECLARE c CURSOR FOR SELECT s FROM t ORDER BY s;"
            + " DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;"
            + " SET total = 0; SET joined = ''; OPEN c;"
            + " rd: LOOP FETCH c INTO v; IF done THEN LEAVE rd; END IF;"
            + " SET total = total + 1; SET joined = CONCAT(joined, v, ','); END LOOP;"
            + " CLOSE c; END",
        "CREATE FUNCTION f_add(a INT, b INT) RETURNS INT DETERMINISTIC RETURN a + b",
      };
      for (String sql : ddl) {
        step(null, () -> {
          try (Statement st = s.c().createStatement()) {
            st.execute(sql);
            out.println("  ok: " + abbrev(sql.length() > 60 ? sql.substring(0, 60) : sql));
          }
        });
      }
    }
  }

  // ---------------------------------------------------------------- types

  static final String TYPES_SELECT = "SELECT * FROM t_types ORDER BY id";

  static void typesText() throws Exception {
    try (Sess s = new Sess("")) {
      q(s, TYPES_SELECT);
      q(s, "SELECT id, ST_AsText(g) AS g_wkt, ST_AsText(pt) AS pt_wkt, JSON_TYPE(js) AS js_type,"
          + " HEX(bit64) AS bit64_hex FROM t_types ORDER BY id");
    }
  }

  static void typesPrepared(boolean server) throws Exception {
    try (Sess s = new Sess(server ? "useServerPrepStmts=true" : "")) {
      step("prepare " + TYPES_SELECT.replace("ORDER", "WHERE id >= ? ORDER"), () -> {
        try (PreparedStatement ps =
            s.c().prepareStatement("SELECT * FROM t_types WHERE id >= ? ORDER BY id")) {
          out.println("  statement class " + ps.getClass().getSimpleName());
          ParameterMetaData pm = ps.getParameterMetaData();
          out.println("  parameter count " + pm.getParameterCount());
          ResultSetMetaData m = ps.getMetaData();
          if (m == null) out.println("  metadata before execute: none");
          else {
            out.println("  metadata before execute:");
            printMeta(m, "    ");
          }
          ps.setInt(1, 0);
          exec(ps);
        }
      });
      pq(s, "SELECT id, ST_AsText(g) AS g_wkt, ST_AsText(pt) AS pt_wkt, JSON_TYPE(js) AS js_type,"
          + " HEX(bit64) AS bit64_hex FROM t_types ORDER BY id");
      // the typed getters on one row of the binary (or text) result
      step("typed getters on row 2", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("SELECT * FROM t_types WHERE id = ?")) {
          ps.setInt(1, 2);
          try (ResultSet rs = ps.executeQuery()) {
            if (rs.next()) typedGetters(rs);
          }
        }
      });
    }
  }

  static void typedGetters(ResultSet rs) throws SQLException {
    String[][] calls = {
      {"ti", "getByte"}, {"tiu", "getShort"}, {"siu", "getInt"}, {"iu", "getLong"},
      {"biu", "getBigDecimal"}, {"biu", "getLong"}, {"bi", "getLong"}, {"b1", "getBoolean"},
      {"dec2", "getBigDecimal"}, {"f", "getFloat"}, {"d", "getDouble"}, {"bit64", "getLong"},
      {"bit8", "getBytes"}, {"dt", "getDate"}, {"tm", "getTime"}, {"dtm6", "getTimestamp"},
      {"dtm6", "LocalDateTime"}, {"dt", "LocalDate"}, {"tm6", "LocalTime"}, {"yr", "getInt"},
      {"yr", "getDate"}, {"bl", "getBytes"}, {"js", "getString"}, {"en", "getString"},
      {"g", "getBytes"},
    };
    for (String[] c : calls) {
      String col = c[0], how = c[1], v;
      try {
        switch (how) {
          case "getByte": v = val(rs.getByte(col)); break;
          case "getShort": v = val(rs.getShort(col)); break;
          case "getInt": v = val(rs.getInt(col)); break;
          case "getLong": v = val(rs.getLong(col)); break;
          case "getBigDecimal": v = val(rs.getBigDecimal(col)); break;
          case "getBoolean": v = val(rs.getBoolean(col)); break;
          case "getFloat": v = val(rs.getFloat(col)); break;
          case "getDouble": v = val(rs.getDouble(col)); break;
          case "getBytes": v = val(rs.getBytes(col)); break;
          case "getDate": v = val(rs.getDate(col)); break;
          case "getTime": v = val(rs.getTime(col)); break;
          case "getTimestamp": v = val(rs.getTimestamp(col)); break;
          case "LocalDateTime": v = val(rs.getObject(col, LocalDateTime.class)); break;
          case "LocalDate": v = val(rs.getObject(col, LocalDate.class)); break;
          case "LocalTime": v = val(rs.getObject(col, LocalTime.class)); break;
          default: v = val(rs.getString(col));
        }
      } catch (SQLException | RuntimeException e) {
        v = "ERROR " + errText(e);
      }
      out.println("    " + how + "(" + col + ") = " + v);
    }
  }

  static final String LITERALS =
      "SELECT 1 AS i1, -9223372036854775808 AS bmin, 18446744073709551615 AS umax,"
          + " 1.5 AS dec_lit, 1e300 AS dbl, 'text' AS s, NULL AS n, X'00FF' AS hx, b'101' AS bits,"
          + " CAST('2020-01-02' AS DATE) AS d, CAST('12:34:56.789' AS TIME(3)) AS t3,"
          + " CAST('2020-01-02 03:04:05.678901' AS DATETIME(6)) AS dt6, CAST(-1 AS UNSIGNED) AS u,"
          + " CAST(1.23456 AS DECIMAL(10,3)) AS dec3, JSON_OBJECT('k', 1, 'arr', JSON_ARRAY(1, 'x')) AS js,"
          + " CONVERT('é' USING latin1) AS lat, 3.0e0 / 7 AS dbl2, TRUE AS tru, 10 DIV 3 AS idiv,"
          + " CAST(7 AS CHAR) AS c7, '' AS empty";

  static void literals() throws Exception {
    try (Sess s = new Sess("")) {
      q(s, LITERALS);
    }
    try (Sess s = new Sess("useServerPrepStmts=true")) {
      pq(s, LITERALS);
    }
  }

  // ---------------------------------------------------------------- parameters

  static void bind(PreparedStatement ps) throws SQLException {
    int i = 1;
    ps.setByte(i++, (byte) -7);
    ps.setShort(i++, (short) 32767);
    ps.setLong(i++, Long.MIN_VALUE);
    ps.setBigDecimal(i++, new BigDecimal("18446744073709551615"));
    ps.setBigDecimal(i++, new BigDecimal("-12345.6789012345"));
    ps.setFloat(i++, 1.25f);
    ps.setDouble(i++, Math.PI);
    ps.setBoolean(i++, true);
    ps.setString(i++, "héllo 😀 'quoted' \\ back");
    ps.setBytes(i++, new byte[] {0, 1, 2, 39, 92, (byte) 255});
    ps.setDate(i++, java.sql.Date.valueOf("2024-02-29"));
    ps.setTime(i++, java.sql.Time.valueOf("12:34:56"));
    java.sql.Timestamp ts = java.sql.Timestamp.valueOf("2024-02-29 12:34:56.123456");
    ps.setTimestamp(i++, ts);
    ps.setObject(i++, LocalDateTime.of(2001, 2, 3, 4, 5, 6, 789000000));
    ps.setObject(i++, LocalDate.of(1999, 12, 31));
    ps.setObject(i++, LocalTime.of(23, 59, 58));
    ps.setString(i++, "{\"k\": [1, \"é\"]}");
    ps.setNull(i++, Types.VARCHAR);
  }

  static final String PARAM_SELECT =
      "SELECT ? AS p_byte, ? AS p_short, ? AS p_long, ? AS p_bigu, ? AS p_dec, ? AS p_float,"
          + " ? AS p_double, ? AS p_bool, ? AS p_string, ? AS p_bytes, ? AS p_date, ? AS p_time,"
          + " ? AS p_ts, ? AS p_ldt, ? AS p_ld, ? AS p_lt, ? AS p_json, ? AS p_null";

  static void parameters() throws Exception {
    for (boolean server : new boolean[] {true, false}) {
      try (Sess s = new Sess(server ? "useServerPrepStmts=true" : "")) {
        String side = server ? "server-side" : "client-side";
        step(side + ": " + abbrev(PARAM_SELECT), () -> {
          try (PreparedStatement ps = s.c().prepareStatement(PARAM_SELECT)) {
            bind(ps);
            exec(ps);
          }
        });
        step(side + ": setObject/setNull variants", () -> {
          try (PreparedStatement ps =
              s.c().prepareStatement("SELECT ? AS big_int, ? AS obj_int, ? AS null_int, ? AS str_num,"
                  + " ? + 1 AS plus_one, CONCAT(?, '|') AS cat, ? IS NULL AS is_null")) {
            ps.setObject(1, new BigInteger("18446744073709551615"));
            ps.setObject(2, Integer.valueOf(-42));
            ps.setNull(3, Types.INTEGER);
            ps.setObject(4, "123.450");
            ps.setInt(5, 41);
            ps.setString(6, "ab\u0000cd");
            ps.setNull(7, Types.BLOB);
            exec(ps);
          }
        });
        if (rw) {
          int id = server ? 1 : 2;
          step(side + ": INSERT INTO t_params (bound values)", () -> {
            try (PreparedStatement ps =
                s.c().prepareStatement("INSERT INTO t_params (id, ti, si, bi, biu, dec2, f, d, b1, s,"
                    + " bl, dt, tm, ts, ldt, ld, lt, js, nul)"
                    + " VALUES (" + id + ", ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
              bind(ps);
              out.println("  update count " + ps.executeUpdate());
              warnings(ps);
            }
          });
        }
      }
    }
    try (Sess s = new Sess("")) {
      q(s, "SELECT * FROM t_params ORDER BY id");
    }
  }

  // ---------------------------------------------------------------- dml

  static void dml() throws Exception {
    try (Sess s = new Sess("")) {
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('a', 1), ('b', 2), ('c', 3)");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('d', 4)");
      q(s, "SELECT LAST_INSERT_ID() AS lii");
      upd(s, "UPDATE t_dml SET v = v + 10 WHERE k IN ('a', 'b')");
      upd(s, "UPDATE t_dml SET v = v WHERE k IN ('a', 'b')");
      upd(s, "UPDATE t_dml SET v = v WHERE k = 'nobody'");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('a', 100) ON DUPLICATE KEY UPDATE v = VALUES(v)");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('a', 100) ON DUPLICATE KEY UPDATE v = VALUES(v)");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('e', 5) ON DUPLICATE KEY UPDATE v = VALUES(v)");
      upd(s, "INSERT INTO t_dml (id, k, v) VALUES (1000, 'big', 0)");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('after', 0)");
      q(s, "SELECT LAST_INSERT_ID() AS lii");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('lii', LAST_INSERT_ID(77))");
      q(s, "SELECT LAST_INSERT_ID() AS lii");
      upd(s, "REPLACE INTO t_dml (id, k, v) VALUES (1, 'a', 5)");
      upd(s, "DELETE FROM t_dml WHERE k IN ('c', 'd')");
      upd(s, "DELETE FROM t_dml WHERE k = 'nobody'");
      q(s, "INSERT INTO t_dml (k, v) SELECT CONCAT('copy-', k), v FROM t_dml WHERE id <= 2");
      for (boolean server : new boolean[] {true, false}) {
        try (Sess p = new Sess(server ? "useServerPrepStmts=true" : "")) {
          String side = server ? "server-side" : "client-side";
          step(side + " prepared INSERT with generated keys", () -> {
            try (PreparedStatement ps =
                p.c().prepareStatement("INSERT INTO t_dml (k, v) VALUES (?, ?)",
                    Statement.RETURN_GENERATED_KEYS)) {
              ps.setString(1, server ? "ps-s" : "ps-c");
              ps.setInt(2, 7);
              out.println("  update count " + ps.executeUpdate() + ", generated keys " + keys(ps));
              warnings(ps);
            }
          });
          step(side + " prepared UPDATE", () -> {
            try (PreparedStatement ps = p.c().prepareStatement("UPDATE t_dml SET v = ? WHERE v = ?")) {
              ps.setInt(1, 8);
              ps.setInt(2, 7);
              out.println("  update count " + ps.executeUpdate());
              out.println("  getUpdateCount " + ps.getUpdateCount() + ", getMoreResults " + ps.getMoreResults()
                  + ", then getUpdateCount " + ps.getUpdateCount());
            }
          });
        }
      }
      q(s, "SELECT * FROM t_dml ORDER BY id");
    }
  }

  static void dmlAffectedRows() throws Exception {
    try (Sess s = new Sess("useAffectedRows=true")) {
      upd(s, "UPDATE t_dml SET v = v WHERE k IN ('a', 'b')");
      upd(s, "UPDATE t_dml SET v = v + 1 WHERE k IN ('a', 'b')");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('a', 100) ON DUPLICATE KEY UPDATE v = VALUES(v)");
      upd(s, "INSERT INTO t_dml (k, v) VALUES ('a', 100) ON DUPLICATE KEY UPDATE v = VALUES(v)");
      q(s, "SELECT k, v FROM t_dml WHERE k IN ('a', 'b') ORDER BY k");
    }
  }

  // ---------------------------------------------------------------- warnings

  static void warnings() throws Exception {
    try (Sess s = new Sess("")) {
      q(s, "SELECT 1/0 AS div0");
      q(s, "SHOW WARNINGS");
      q(s, "SELECT @@warning_count AS wc");
      q(s, "SELECT CAST('12abc' AS SIGNED) AS c1, CAST('x' AS DOUBLE) AS c2");
      q(s, "SHOW COUNT(*) WARNINGS");
      if (rw) {
        q(s, "SET SESSION sql_mode = ''");
        upd(s, "INSERT INTO t_dml (k, v, tiny) VALUES ('w1', 1, 300)");
        upd(s, "INSERT IGNORE INTO t_dml (k, v) VALUES ('a', 1)");
        upd(s, "UPDATE t_dml SET tiny = 'abc' WHERE k = 'w1'");
        q(s, "SHOW WARNINGS");
        q(s, "DROP TABLE IF EXISTS no_such_table_xyz");
      }
      q(s, "SELECT 1 AS no_warnings");
    }
    try (Sess s = new Sess("useServerPrepStmts=true")) {
      pq(s, "SELECT 1/0 AS div0, CAST('12abc' AS SIGNED) AS c1");
      pq(s, "SHOW WARNINGS");
      step("connection getWarnings", () -> {
        SQLWarning w = s.c().getWarnings();
        int n = 0;
        for (; w != null; w = w.getNextWarning()) {
          n++;
          out.println("  warning code=" + w.getErrorCode() + " state=" + w.getSQLState() + ": " + clean(w.getMessage()));
        }
        out.println("  connection warnings: " + n);
      });
    }
  }

  // ---------------------------------------------------------------- batches

  static void psBatch(Sess s, String label, String prefix, boolean keys) {
    step(label, () -> {
      try (PreparedStatement ps =
          keys
              ? s.c().prepareStatement("INSERT INTO t_dml (k, v) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)
              : s.c().prepareStatement("INSERT INTO t_dml (k, v) VALUES (?, ?)")) {
        for (int i = 1; i <= 3; i++) {
          ps.setString(1, prefix + i);
          ps.setInt(2, i * 10);
          ps.addBatch();
        }
        out.println("  executeBatch " + Arrays.toString(ps.executeBatch()));
        if (keys) out.println("  generated keys " + keys(ps));
        warnings(ps);
      }
    });
    step(label + ", UPDATE batch", () -> {
      try (PreparedStatement ps = s.c().prepareStatement("UPDATE t_dml SET v = v + ? WHERE k LIKE ?")) {
        ps.setInt(1, 1);
        ps.setString(2, prefix + "%");
        ps.addBatch();
        ps.setInt(1, 2);
        ps.setString(2, prefix + "1");
        ps.addBatch();
        ps.setInt(1, 3);
        ps.setString(2, "nobody");
        ps.addBatch();
        out.println("  executeBatch " + Arrays.toString(ps.executeBatch()));
      }
    });
    step(label + ", batch with a duplicate key in the middle", () -> {
      try (PreparedStatement ps = s.c().prepareStatement("INSERT INTO t_dml (k, v) VALUES (?, ?)")) {
        for (String k : new String[] {prefix + "x", prefix + "1", prefix + "y"}) {
          ps.setString(1, k);
          ps.setInt(2, 0);
          ps.addBatch();
        }
        out.println("  executeBatch " + Arrays.toString(ps.executeBatch()));
      }
    });
    step(label + ", rows", () -> {
      try (PreparedStatement ps =
          s.c().prepareStatement("SELECT k, v FROM t_dml WHERE k LIKE ? ORDER BY k")) {
        ps.setString(1, prefix + "%");
        try (ResultSet rs = ps.executeQuery()) {
          StringBuilder b = new StringBuilder();
          while (rs.next()) b.append(' ').append(rs.getString(1)).append('=').append(rs.getInt(2));
          out.println("  rows" + b);
        }
      }
    });
  }

  static void stmtBatch(Sess s, String label, String prefix) {
    step(label, () -> {
      try (Statement st = s.c().createStatement()) {
        st.addBatch("INSERT INTO t_dml (k, v) VALUES ('" + prefix + "1', 1), ('" + prefix + "2', 2)");
        st.addBatch("UPDATE t_dml SET v = v + 1 WHERE k LIKE '" + prefix + "%'");
        st.addBatch("DELETE FROM t_dml WHERE k = 'nobody'");
        st.addBatch("SET @batch_var = 1");
        out.println("  executeBatch " + Arrays.toString(st.executeBatch()));
        warnings(st);
      }
    });
    step(label + ", with an error", () -> {
      try (Statement st = s.c().createStatement()) {
        st.addBatch("INSERT INTO t_dml (k, v) VALUES ('" + prefix + "3', 3)");
        st.addBatch("INSERT INTO t_dml (k, v) VALUES ('" + prefix + "1', 1)");
        st.addBatch("INSERT INTO t_dml (k, v) VALUES ('" + prefix + "4', 4)");
        out.println("  executeBatch " + Arrays.toString(st.executeBatch()));
      }
    });
  }

  static void batches() throws Exception {
    try (Sess s = new Sess("")) {
      stmtBatch(s, "Statement batch", "sb");
      psBatch(s, "client-side PreparedStatement batch", "cb", true);
    }
    try (Sess s = new Sess("useServerPrepStmts=true")) {
      psBatch(s, "server-side PreparedStatement batch", "sp", true);
    }
    try (Sess s = new Sess("useServerPrepStmts=true&useBulkStmts=true")) {
      psBatch(s, "server-side batch, useBulkStmts=true (COM_STMT_BULK_EXECUTE)", "bk", false);
    }
    try (Sess s = new Sess("rewriteBatchedStatements=true")) {
      stmtBatch(s, "Statement batch, rewriteBatchedStatements=true", "rs");
      psBatch(s, "PreparedStatement batch, rewriteBatchedStatements=true", "rp", true);
    }
    try (Sess s = new Sess("useBatchMultiSend=false")) {
      psBatch(s, "PreparedStatement batch, useBatchMultiSend=false", "ns", true);
    }
  }

  // ---------------------------------------------------------------- transactions

  static void txState(Sess s) {
    step(null, () -> {
      Connection c = s.c();
      out.println("  getAutoCommit " + c.getAutoCommit());
      try (Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT @@autocommit AS ac, @@in_transaction AS itx")) {
        rs.next();
        out.println("  @@autocommit " + rs.getString(1) + ", @@in_transaction " + rs.getString(2));
      }
    });
  }

  static void txRows(Sess s) {
    step(null, () -> {
      try (Statement st = s.c().createStatement();
          ResultSet rs = st.executeQuery("SELECT id, v FROM t_tx ORDER BY id")) {
        StringBuilder b = new StringBuilder();
        while (rs.next()) b.append(' ').append(rs.getInt(1)).append('=').append(rs.getString(2));
        out.println("  t_tx:" + b);
      }
    });
  }

  static void transactions() throws Exception {
    try (Sess s = new Sess(""); Sess other = new Sess("")) {
      if (!rw) {
        step("read-only transaction through the API", () -> {
          Connection c = s.c();
          c.setAutoCommit(false);
          out.println("  getAutoCommit " + c.getAutoCommit());
        });
        txRows(s);
        txState(s);
        step("commit", () -> s.c().commit());
        step("rollback", () -> s.c().rollback());
        step("setAutoCommit(true)", () -> s.c().setAutoCommit(true));
        txState(s);
        q(s, "START TRANSACTION READ ONLY");
        txState(s);
        q(s, "SELECT COUNT(*) AS n FROM t_types");
        q(s, "COMMIT");
        q(s, "SET autocommit = 0");
        txState(s);
        q(s, "SELECT COUNT(*) AS n FROM t_tx");
        q(s, "ROLLBACK");
        q(s, "SET autocommit = 1");
        txState(s);
        return;
      }
      step("API: setAutoCommit(false), insert 1, rollback", () -> {
        Connection c = s.c();
        c.setAutoCommit(false);
        try (Statement st = c.createStatement()) {
          out.println("  insert " + st.executeUpdate("INSERT INTO t_tx VALUES (1, 'rolled back')"));
        }
      });
      txState(s);
      step("rollback", () -> s.c().rollback());
      txRows(s);
      step("API: insert 2, commit", () -> {
        try (Statement st = s.c().createStatement()) {
          out.println("  insert " + st.executeUpdate("INSERT INTO t_tx VALUES (2, 'committed')"));
        }
        s.c().commit();
      });
      txRows(other);
      step("API: savepoint", () -> {
        Connection c = s.c();
        try (Statement st = c.createStatement()) {
          st.executeUpdate("INSERT INTO t_tx VALUES (3, 'before sp')");
          Savepoint sp = c.setSavepoint("sp1");
          st.executeUpdate("INSERT INTO t_tx VALUES (4, 'after sp')");
          c.rollback(sp);
          c.releaseSavepoint(sp);
          c.commit();
          out.println("  committed with savepoint rollback");
        }
      });
      txRows(other);
      step("setAutoCommit(true)", () -> s.c().setAutoCommit(true));
      txState(s);
      q(s, "BEGIN");
      txState(s);
      q(s, "INSERT INTO t_tx VALUES (5, 'sql rollback')");
      q(s, "ROLLBACK");
      q(s, "START TRANSACTION");
      q(s, "INSERT INTO t_tx VALUES (6, 'sql commit')");
      txState(s);
      q(s, "COMMIT");
      txState(s);
      q(s, "SET autocommit = 0");
      txState(s);
      q(s, "INSERT INTO t_tx VALUES (7, 'autocommit 0')");
      txRows(other);
      q(s, "ROLLBACK");
      q(s, "INSERT INTO t_tx VALUES (8, 'autocommit 0 commit')");
      q(s, "COMMIT");
      q(s, "SET autocommit = 1");
      txState(s);
      step("setAutoCommit(false) then close without commit", () -> {
        Connection c = open("", user, pass);
        c.setAutoCommit(false);
        try (Statement st = c.createStatement()) {
          st.executeUpdate("INSERT INTO t_tx VALUES (9, 'lost at close')");
        }
        c.close();
        out.println("  closed");
      });
      txRows(other);
    }
  }

  // ---------------------------------------------------------------- multi-statements

  static void multiStatements() throws Exception {
    try (Sess s = new Sess("")) {
      out.println("-- without allowMultiQueries");
      q(s, "SELECT 1 AS a; SELECT 2 AS b");
      q(s, "SELECT 3 AS after_error");
    }
    try (Sess s = new Sess("allowMultiQueries=true")) {
      out.println("-- allowMultiQueries=true");
      q(s, "SELECT 1 AS a; SELECT 'two' AS b, 2.5 AS c; SET @mq = 5; SELECT @mq AS mq");
      q(s, "SELECT id FROM t_types WHERE id < 3 ORDER BY id; SELECT COUNT(*) AS n FROM t_types;"
          + " SELECT s FROM t ORDER BY s");
      if (rw) {
        q(s, "INSERT INTO t_dml (k, v) VALUES ('m1', 1), ('m2', 2); SET @x = 1;"
            + " SELECT k, v FROM t_dml WHERE k LIKE 'm%' ORDER BY k;"
            + " UPDATE t_dml SET v = v + 1 WHERE k LIKE 'm%'; DELETE FROM t_dml WHERE k = 'm2';"
            + " SELECT k, v FROM t_dml WHERE k LIKE 'm%' ORDER BY k");
        q(s, "SELECT 1 AS before_err; INSERT INTO t_dml (k, v) VALUES ('a', 1); SELECT 2 AS after_err");
      }
      q(s, "SELECT 1 AS before_err; SELECT * FROM no_such_table; SELECT 2 AS after_err");
      q(s, "SELECT 'still usable' AS ok");
      step("client-side prepared multi-statement with parameters", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("SELECT ? AS p1; SELECT ? AS p2, 'x' AS x")) {
          ps.setInt(1, 10);
          ps.setString(2, "second");
          exec(ps);
        }
      });
    }
  }

  // ---------------------------------------------------------------- procedures

  static void procedures() throws Exception {
    try (Sess s = new Sess("")) {
      q(s, "CALL p_multi(7)");
      q(s, "SET @c = 'start'");
      q(s, "CALL p_out(5, @b, @c)");
      q(s, "SELECT @b AS b, @c AS c");
      q(s, "CALL p_out_rs(10, @d)");
      q(s, "SELECT @d AS d");
      step("client-side prepared CALL p_multi(?)", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("CALL p_multi(?)")) {
          ps.setInt(1, 8);
          exec(ps);
        }
      });
      q(s, "SELECT f_add(2, 3) AS f");
    }
    try (Sess s = new Sess("useServerPrepStmts=true")) {
      step("server-side prepared CALL p_multi(?)", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("CALL p_multi(?)")) {
          out.println("  statement class " + ps.getClass().getSimpleName());
          ps.setInt(1, 9);
          exec(ps);
        }
      });
      step("server-side prepared CALL p_out(?, @b, @c)", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("CALL p_out(?, @b, @c)")) {
          ps.setInt(1, 6);
          exec(ps);
        }
      });
      q(s, "SELECT @b AS b, @c AS c");
    }
    try (Sess s = new Sess("")) {
      step("CallableStatement {call p_out(?, ?, ?)}: IN, OUT, INOUT", () -> {
        try (CallableStatement cs = s.c().prepareCall("{call p_out(?, ?, ?)}")) {
          out.println("  statement class " + cs.getClass().getSimpleName());
          cs.setInt(1, 21);
          cs.registerOutParameter(2, Types.INTEGER);
          cs.setString(3, "in");
          cs.registerOutParameter(3, Types.VARCHAR);
          boolean isRs = cs.execute();
          results(cs, isRs);
          out.println("  out b getInt " + cs.getInt(2) + ", getObject " + val(cs.getObject(2)));
          out.println("  inout c getString " + str(cs.getString(3)) + ", getObject " + val(cs.getObject(3)));
          ParameterMetaData pm = cs.getParameterMetaData();
          for (int i = 1; i <= pm.getParameterCount(); i++) {
            out.println("  param " + i + " mode " + pm.getParameterMode(i) + " type " + pm.getParameterTypeName(i));
          }
          // again, with a NULL INOUT
          cs.setInt(1, 1);
          cs.setNull(3, Types.VARCHAR);
          cs.execute();
          out.println("  second call: b " + cs.getInt(2) + ", c " + str(cs.getString(3)));
        }
      });
      step("CallableStatement named parameters {call p_out(?, ?, ?)}", () -> {
        try (CallableStatement cs = s.c().prepareCall("{call p_out(?, ?, ?)}")) {
          cs.setInt("a", 4);
          cs.registerOutParameter("b", Types.INTEGER);
          cs.setString("c", "named");
          cs.registerOutParameter("c", Types.VARCHAR);
          cs.execute();
          out.println("  b " + cs.getInt("b") + ", c " + str(cs.getString("c")));
        }
      });
      step("CallableStatement {call p_out_rs(?, ?)}: result set and OUT", () -> {
        try (CallableStatement cs = s.c().prepareCall("{call p_out_rs(?, ?)}")) {
          cs.setInt(1, 10);
          cs.registerOutParameter(2, Types.DECIMAL);
          boolean isRs = cs.execute();
          results(cs, isRs);
          out.println("  out b " + val(cs.getBigDecimal(2)));
        }
      });
      step("CallableStatement {call p_multi(?)}: several result sets", () -> {
        try (CallableStatement cs = s.c().prepareCall("{call p_multi(?)}")) {
          cs.setInt(1, 11);
          boolean isRs = cs.execute();
          results(cs, isRs);
        }
      });
      step("CallableStatement {? = call f_add(?, ?)}", () -> {
        try (CallableStatement cs = s.c().prepareCall("{? = call f_add(?, ?)}")) {
          cs.registerOutParameter(1, Types.INTEGER);
          cs.setInt(2, 40);
          cs.setInt(3, 2);
          cs.execute();
          out.println("  return " + val(cs.getObject(1)));
        }
      });
      q(s, "CALL no_such_procedure()");
      q(s, "SELECT 'after procedures' AS ok");
    }
  }

  static void cursorProcedures() throws Exception {
    out.println("-- each call on its own connection, read timeout " + CURSOR_TIMEOUT_MS + " ms");
    try (Sess s = new Sess("", user, pass, CURSOR_TIMEOUT_MS)) {
      q(s, "CALL p_cursor()");
      q(s, "SELECT 'connection after the call' AS ok");
    }
    try (Sess s = new Sess("useServerPrepStmts=true", user, pass, CURSOR_TIMEOUT_MS)) {
      pq(s, "CALL p_cursor()");
    }
    try (Sess s = new Sess("", user, pass, CURSOR_TIMEOUT_MS)) {
      q(s, "CALL p_cursor_loop(@total, @joined)");
      q(s, "SELECT @total AS total, @joined AS joined");
    }
    try (Sess s = new Sess("useServerPrepStmts=true", user, pass, CURSOR_TIMEOUT_MS)) {
      pq(s, "CALL p_cursor_loop(@total, @joined)");
      q(s, "SELECT @total AS total, @joined AS joined");
    }
    try (Sess s = new Sess("", user, pass, CURSOR_TIMEOUT_MS)) {
      step("CallableStatement {call p_cursor_loop(?, ?)}", () -> {
        try (CallableStatement cs = s.c().prepareCall("{call p_cursor_loop(?, ?)}")) {
          cs.registerOutParameter(1, Types.INTEGER);
          cs.registerOutParameter(2, Types.VARCHAR);
          boolean isRs = cs.execute();
          results(cs, isRs);
          out.println("  total " + cs.getInt(1) + ", joined " + str(cs.getString(2)));
        }
      });
    }
  }

  // ---------------------------------------------------------------- variables

  static void variables() throws Exception {
    try (Sess s = new Sess("")) {
      q(s, "SET @v_int = 42, @v_str = 'héllo', @v_dec = 1.50, @v_null = NULL,"
          + " @v_big = 18446744073709551615, @v_dbl = 1.5e10, @v_bin = X'00FF'");
      q(s, "SELECT @v_int, @v_str, @v_dec, @v_null, @v_big, @v_dbl, @v_bin, @v_undefined");
      q(s, "SET @v_int := @v_int + 1");
      q(s, "SELECT @v_int AS v_int, (@v_cnt := 3) + 1 AS assigned, @v_cnt AS v_cnt");
      q(s, "SET SESSION sql_mode = 'ANSI_QUOTES,NO_ZERO_DATE'");
      q(s, "SELECT @@session.sql_mode AS sql_mode");
      q(s, "SELECT \"ansi\" AS quoted_identifier");
      q(s, "SET SESSION time_zone = '+05:30'");
      q(s, "SELECT @@session.time_zone AS tz, CONVERT_TZ('2024-01-01 00:00:00', '+00:00', @@session.time_zone) AS conv");
      q(s, "SET SESSION group_concat_max_len = 12345, SESSION div_precision_increment = 8");
      q(s, "SELECT @@group_concat_max_len AS gcml, 1/3 AS third");
      q(s, "SET SESSION sql_mode = DEFAULT, time_zone = DEFAULT");
      q(s, "SELECT @@session.sql_mode = @@global.sql_mode AS mode_is_default,"
          + " @@session.time_zone = @@global.time_zone AS tz_is_default");
      step("setTransactionIsolation / getTransactionIsolation", () -> {
        Connection c = s.c();
        out.println("  default " + c.getTransactionIsolation());
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        out.println("  after READ_COMMITTED " + c.getTransactionIsolation());
        c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
        out.println("  after SERIALIZABLE " + c.getTransactionIsolation());
      });
      q(s, "SELECT @@session.tx_isolation AS iso");
      step("setCatalog (COM_INIT_DB) / getCatalog", () -> {
        Connection c = s.c();
        out.println("  getCatalog " + c.getCatalog());
        c.setCatalog("information_schema");
        out.println("  after setCatalog(information_schema) " + c.getCatalog());
      });
      q(s, "SELECT DATABASE() AS db");
      q(s, "USE " + db);
      step("getCatalog after USE", () -> out.println("  getCatalog " + s.c().getCatalog()));
      q(s, "SELECT DATABASE() = '" + db + "' AS back_in_cb_db");
    }
    try (Sess s = new Sess("useServerPrepStmts=true")) {
      q(s, "SET @p1 = 'prepared', @p2 = 2");
      step("server-side prepared SELECT @p1, @p2, ?", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("SELECT @p1 AS p1, @p2 + ? AS p2")) {
          ps.setInt(1, 40);
          exec(ps);
        }
      });
      pq(s, "SET @p3 = 'set by prepared'");
      q(s, "SELECT @p3 AS p3");
    }
    try (Sess s = new Sess("sessionVariables=time_zone='+01:00',group_concat_max_len=2048")) {
      out.println("-- sessionVariables=time_zone='+01:00',group_concat_max_len=2048");
      q(s, "SELECT @@session.time_zone AS tz, @@session.group_concat_max_len AS gcml,"
          + " LOCATE('STRICT_TRANS_TABLES', @@session.sql_mode) > 0 AS strict");
    }
  }

  // ---------------------------------------------------------------- charsets

  static void charsets() throws Exception {
    String lit = "SELECT 'héllo wörld ñ' AS accents, '😀🎉' AS emoji, CHAR_LENGTH('😀🎉') AS chars,"
        + " LENGTH('😀🎉') AS bytes, HEX('é') AS hex_e";
    try (Sess s = new Sess("")) {
      q(s, "SELECT @@character_set_client AS cs_client, @@character_set_connection AS cs_conn,"
          + " @@character_set_results AS cs_results, @@collation_connection AS coll");
      q(s, lit);
      q(s, "SELECT id, u, l, HEX(u) AS hu, HEX(l) AS hl, CHAR_LENGTH(u) AS cu FROM t_cs ORDER BY id");
      if (rw) {
        step("insert utf8mb4 and latin1 values through parameters", () -> {
          try (PreparedStatement ps = s.c().prepareStatement("INSERT INTO t_cs VALUES (?, ?, ?)")) {
            ps.setInt(1, 3);
            ps.setString(2, "Ünïcödé 𝄞 ✓");
            ps.setString(3, "Ünïcödé ÿ");
            out.println("  update count " + ps.executeUpdate());
            ps.setInt(1, 4);
            ps.setString(2, "ok");
            ps.setString(3, "emoji 😀 in latin1");
            out.println("  update count " + ps.executeUpdate());
            warnings(ps);
          }
        });
        q(s, "SELECT id, u, l, HEX(l) AS hl FROM t_cs WHERE id >= 3 ORDER BY id");
      }
      q(s, "SET NAMES latin1");
      q(s, "SELECT @@character_set_client AS cs_client, @@character_set_results AS cs_results");
      q(s, "SELECT 'é' AS e_literal, HEX('é') AS hex_e, u, l FROM t_cs WHERE id = 2");
      q(s, "SET NAMES utf8mb4 COLLATE utf8mb4_bin");
      q(s, "SELECT @@collation_connection AS coll, 'a' = 'A' AS ci_equal");
      q(s, "SET NAMES utf8mb4");
      q(s, "SELECT 'a' = 'A' AS ci_equal, _latin1 X'E9' AS latin1_e, _utf8mb4 X'F09F9880' AS emoji_bytes");
    }
    try (Sess s = new Sess("useServerPrepStmts=true")) {
      pq(s, lit);
      step("server-side prepared SELECT ? (emoji parameter)", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("SELECT ? AS p, HEX(?) AS h, CHAR_LENGTH(?) AS n")) {
          String v = "Grüße 😀";
          ps.setString(1, v);
          ps.setString(2, v);
          ps.setString(3, v);
          exec(ps);
        }
      });
      pq(s, "SELECT id, u, l FROM t_cs ORDER BY id");
    }
  }

  // ---------------------------------------------------------------- errors

  static void errors() throws Exception {
    // On a read-only endpoint sluice refuses what it cannot prove to be a read (error 1290): a
    // statement it cannot classify, SIGNAL, DO. A syntax error inside a SELECT reaches the replica.
    try (Sess s = new Sess("")) {
      q(s, rw ? "SELEC 1" : "SELECT 1 FROM WHERE");
      q(s, "SELECT 'after syntax error' AS ok");
      q(s, "SELECT * FROM no_such_table");
      q(s, "SELECT 'after unknown table' AS ok");
      q(s, "SELECT no_such_column FROM t_types");
      q(s, "SELECT 'after unknown column' AS ok");
      q(s, "SELECT * FROM other_db_xyz.t");
      if (rw) {
        q(s, "INSERT INTO t_dml (k, v) VALUES ('a', 1)");
        q(s, "SELECT 'after duplicate key' AS ok");
        q(s, "INSERT INTO t_dml (k, v) VALUES (NULL, 1)");
        q(s, "INSERT INTO t_tx VALUES ('not a number', 'x')");
      }
      if (rw) {
        q(s, "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom failure', MYSQL_ERRNO = 1644");
      }
      q(s, "SELECT 'after signal' AS ok");
      q(s, "SELECT JSON_EXTRACT('{bad json', '$.a') AS bad_json");
      if (rw) {
        q(s, "DO 1");
      }
    }
    for (boolean server : new boolean[] {true, false}) {
      try (Sess s = new Sess(server ? "useServerPrepStmts=true" : "")) {
        String side = server ? "server-side" : "client-side";
        pq(s, rw ? "SELEC 1" : "SELECT 1 FROM WHERE");
        pq(s, rw ? "SELEC ?" : "SELECT ? FROM WHERE");
        pq(s, "SELECT * FROM no_such_table WHERE a = 1");
        if (rw) {
          step(side + " prepared INSERT duplicate key", () -> {
            try (PreparedStatement ps = s.c().prepareStatement("INSERT INTO t_dml (k, v) VALUES (?, ?)")) {
              ps.setString(1, "a");
              ps.setInt(2, 1);
              out.println("  update count " + ps.executeUpdate());
            }
          });
        }
        step(side + " execute with a missing parameter", () -> {
          try (PreparedStatement ps = s.c().prepareStatement("SELECT ? AS a, ? AS b")) {
            ps.setInt(1, 1);
            exec(ps);
          }
        });
        pq(s, "SELECT 'after " + side + " errors' AS ok");
      }
    }
    step("connect with a wrong password", () -> {
      try (Connection c = open("", user, pass + "-wrong")) {
        out.println("  connected?!");
      }
    });
    step("connect to an unknown database", () -> {
      Properties props = new Properties();
      props.setProperty("user", user);
      props.setProperty("password", pass);
      String u = "jdbc:mariadb://" + host + ":" + port + "/no_such_db_xyz?socketTimeout=" + SOCKET_TIMEOUT_MS
          + "&connectTimeout=10000";
      try (Connection c = DriverManager.getConnection(u, props)) {
        out.println("  connected?!");
      }
    });
    step("connect with an unknown user", () -> {
      try (Connection c = open("", "no_such_user_xyz", "pw")) {
        out.println("  connected?!");
      }
    });
  }

  // ---------------------------------------------------------------- big values

  static byte[] bigBytes() {
    byte[] b = new byte[BIG];
    for (int i = 0; i < BIG; i++) b[i] = (byte) ((i * 31 + 7) ^ (i >>> 13));
    return b;
  }

  static String bigText() {
    StringBuilder sb = new StringBuilder(BIG);
    String unit = "The quick brown fox jumps over the lazy dog 0123456789.\n";
    while (sb.length() < BIG) sb.append(unit);
    sb.setLength(BIG);
    return sb.toString();
  }

  static void bigRead(ResultSet rs) throws SQLException {
    int row = 0;
    while (rs.next()) {
      row++;
      StringBuilder b = new StringBuilder("  row " + row + ":");
      ResultSetMetaData m = rs.getMetaData();
      for (int i = 1; i <= m.getColumnCount(); i++) {
        b.append(' ').append(m.getColumnLabel(i)).append('=');
        Object o = rs.getObject(i);
        if (o instanceof byte[]) b.append("byte[").append(((byte[]) o).length).append("] sha256=").append(sha((byte[]) o));
        else if (o instanceof String && ((String) o).length() > 120) {
          String str = (String) o;
          b.append("String[").append(str.length()).append("] sha256=").append(sha(str.getBytes(StandardCharsets.UTF_8)));
        } else b.append(val(o));
      }
      out.println(b);
    }
    out.println("  rows: " + row);
  }

  static void bigValues() throws Exception {
    out.println("-- local: bytes sha256=" + sha(bigBytes()) + ", text sha256="
        + sha(bigText().getBytes(StandardCharsets.UTF_8)));
    String sel = "SELECT id, LENGTH(lb) AS len_lb, LENGTH(lt) AS len_lt, SHA2(lb, 256) AS sha_lb,"
        + " SHA2(lt, 256) AS sha_lt, lb, lt FROM t_big ORDER BY id";
    String rep = "SELECT REPEAT('x', 17 * 1024 * 1024) AS big_x, LENGTH(REPEAT('y', 17 * 1024 * 1024)) AS len_y";
    if (rw) {
      try (Sess s = new Sess("useServerPrepStmts=true")) {
        step("server-side prepared INSERT of a 17 MiB LONGBLOB and LONGTEXT (binary protocol)", () -> {
          try (PreparedStatement ps = s.c().prepareStatement("INSERT INTO t_big VALUES (?, ?, ?)")) {
            ps.setInt(1, 1);
            ps.setBytes(2, bigBytes());
            ps.setString(3, bigText());
            out.println("  update count " + ps.executeUpdate());
          }
        });
        step("server-side prepared INSERT through setBinaryStream (COM_STMT_SEND_LONG_DATA)", () -> {
          try (PreparedStatement ps = s.c().prepareStatement("INSERT INTO t_big VALUES (?, ?, ?)")) {
            ps.setInt(1, 3);
            ps.setBinaryStream(2, new ByteArrayInputStream(bigBytes()));
            ps.setCharacterStream(3, new java.io.StringReader(bigText()));
            out.println("  update count " + ps.executeUpdate());
          }
        });
      }
      try (Sess s = new Sess("")) {
        step("client-side prepared INSERT of a 17 MiB LONGBLOB and LONGTEXT (text protocol)", () -> {
          try (PreparedStatement ps = s.c().prepareStatement("INSERT INTO t_big VALUES (?, ?, ?)")) {
            ps.setInt(1, 2);
            ps.setBytes(2, bigBytes());
            ps.setString(3, bigText());
            out.println("  update count " + ps.executeUpdate());
          }
        });
      }
    }
    try (Sess s = new Sess("")) {
      step("text protocol: " + abbrev(sel), () -> {
        try (Statement st = s.c().createStatement(); ResultSet rs = st.executeQuery(sel)) {
          bigRead(rs);
        }
      });
      step("text protocol: " + rep, () -> {
        try (Statement st = s.c().createStatement(); ResultSet rs = st.executeQuery(rep)) {
          bigRead(rs);
        }
      });
      q(s, "SELECT 'after big values' AS ok");
    }
    try (Sess s = new Sess("useServerPrepStmts=true")) {
      step("binary protocol: " + abbrev(sel), () -> {
        try (PreparedStatement ps = s.c().prepareStatement(sel); ResultSet rs = ps.executeQuery()) {
          bigRead(rs);
        }
      });
      step("binary protocol: " + rep, () -> {
        try (PreparedStatement ps = s.c().prepareStatement(rep); ResultSet rs = ps.executeQuery()) {
          bigRead(rs);
        }
      });
      step("binary protocol: SELECT ? with a 17 MiB parameter", () -> {
        try (PreparedStatement ps = s.c().prepareStatement("SELECT LENGTH(?) AS len, SHA2(?, 256) AS sha")) {
          String t = bigText();
          ps.setString(1, t);
          ps.setString(2, t);
          try (ResultSet rs = ps.executeQuery()) {
            bigRead(rs);
          }
        }
      });
      pq(s, "SELECT 'after big values' AS ok");
    }
  }

  // ---------------------------------------------------------------- load data

  static void loadData() throws Exception {
    Path file = Paths.get(work, "java-load.csv");
    String csv = "1,alpha,1.50,first\n2,\"béta, quoted\",2.25,\\N\n3,gamma,not-a-number,third\n"
        + "4,delta 😀,4.00,\"multi\"\n5,epsilon,5,fifth\n";
    Files.write(file, csv.getBytes(StandardCharsets.UTF_8));
    String load = "LOAD DATA LOCAL INFILE '" + file.toString().replace("\\", "\\\\").replace("'", "\\'")
        + "' INTO TABLE t_load CHARACTER SET utf8mb4 FIELDS TERMINATED BY ','"
        + " OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n' (id, name, amount, note)";
    try (Sess s = new Sess("allowLocalInfile=true")) {
      q(s, "SET SESSION sql_mode = ''");
      upd(s, load);
      q(s, "SELECT * FROM t_load ORDER BY id");
      upd(s, load.replace("INTO TABLE", "REPLACE INTO TABLE"));
      upd(s, load.replace("INTO TABLE", "IGNORE INTO TABLE"));
      q(s, "DELETE FROM t_load WHERE id >= 3");
      step("LOAD DATA LOCAL INFILE with setLocalInfileInputStream", () -> {
        try (Statement st = s.c().createStatement()) {
          org.mariadb.jdbc.MariaDbStatement ms = st.unwrap(org.mariadb.jdbc.MariaDbStatement.class);
          ms.setLocalInfileInputStream(
              new ByteArrayInputStream("10,from stream,10.10,s\n11,second,11.11,s\n".getBytes(StandardCharsets.UTF_8)));
          out.println("  update count " + st.executeUpdate(load));
          warnings(st);
        }
      });
      upd(s, load.replace("java-load.csv", "no-such-file.csv"));
      q(s, "SELECT 'after missing file' AS ok");
      q(s, "SELECT * FROM t_load ORDER BY id");
    }
    try (Sess s = new Sess("allowLocalInfile=false")) {
      out.println("-- allowLocalInfile=false");
      upd(s, load);
      q(s, "SELECT COUNT(*) AS n FROM t_load");
    }
  }

  // ---------------------------------------------------------------- session state

  static void sessionState() throws Exception {
    try (Sess s = new Sess("useResetConnection=true")) {
      q(s, "SET @sv = 'user variable', SESSION sql_mode = 'ANSI', SESSION time_zone = '+03:00'");
      if (rw) {
        q(s, "CREATE TEMPORARY TABLE tmp_state (a INT)");
        q(s, "INSERT INTO tmp_state VALUES (1), (2)");
        q(s, "SELECT COUNT(*) AS n FROM tmp_state");
      }
      q(s, "SELECT @sv AS sv, @@session.sql_mode AS mode, @@session.time_zone AS tz");
      step("isValid(5) (COM_PING)", () -> out.println("  isValid " + s.c().isValid(5)));
      step("reset() with useResetConnection=true (COM_RESET_CONNECTION)", () -> {
        ((org.mariadb.jdbc.MariaDbConnection) s.c().unwrap(org.mariadb.jdbc.MariaDbConnection.class)).reset();
        out.println("  reset done");
      });
      q(s, "SELECT @sv AS sv, @@session.sql_mode = @@global.sql_mode AS mode_reset,"
          + " @@session.time_zone = @@global.time_zone AS tz_reset");
      if (rw) q(s, "SELECT COUNT(*) AS n FROM tmp_state");
      q(s, "SELECT 'after reset' AS ok");
    }
    try (Sess s = new Sess("")) {
      q(s, "SET @sv2 = 'kept'");
      step("reset() without useResetConnection (driver state only)", () -> {
        s.c().unwrap(org.mariadb.jdbc.MariaDbConnection.class).reset();
        out.println("  reset done");
      });
      q(s, "SELECT @sv2 AS sv2");
    }
    step("close and open again", () -> {
      Connection c = open("", user, pass);
      try (Statement st = c.createStatement()) {
        st.execute("SET @gone = 'before close'");
      }
      c.close();
      out.println("  closed: isClosed " + c.isClosed() + ", isValid " + c.isValid(1));
      try (Connection c2 = open("", user, pass);
          Statement st = c2.createStatement();
          ResultSet rs = st.executeQuery("SELECT @gone AS gone, DATABASE() = '" + db + "' AS same_db")) {
        dump(rs);
      }
    });
    out.println("-- change user: Connector/J has no changeUser API; connecting as CB_USER2 instead");
    try (Sess s = new Sess("", user2, pass2, SOCKET_TIMEOUT_MS)) {
      q(s, "SELECT CURRENT_USER() AS cu, DATABASE() = '" + db + "' AS same_db");
      q(s, "SELECT COUNT(*) AS n FROM t_types");
      q(s, "SELECT COUNT(*) AS n FROM mysql.user");
      q(s, "SHOW GRANTS");
    }
  }

  // ---------------------------------------------------------------- jdbc:mysql

  static void mysqlScheme() throws Exception {
    step("jdbc:mysql://... with permitMysqlScheme", () -> {
      try (Connection c = open("mysql", "permitMysqlScheme", user, pass, SOCKET_TIMEOUT_MS)) {
        out.println("  driver " + c.getMetaData().getDriverName() + ", connection " + c.getClass().getSimpleName());
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT 1 AS one, DATABASE() = '" + db + "' AS same_db")) {
          dump(rs);
        }
      }
    });
  }

  // ---------------------------------------------------------------- database metadata

  static void rows(ResultSet rs, String... cols) throws SQLException {
    int n = 0;
    while (rs.next()) {
      n++;
      StringBuilder b = new StringBuilder("   ");
      for (String c : cols) b.append(' ').append(c).append('=').append(rs.getString(c));
      out.println(b);
    }
    out.println("  rows: " + n);
  }

  static void databaseMetadata() throws Exception {
    try (Sess s = new Sess("")) {
      step("getTables", () -> {
        DatabaseMetaData dm = s.c().getMetaData();
        try (ResultSet rs = dm.getTables(db, null, "%", new String[] {"TABLE"})) {
          rows(rs, "TABLE_NAME", "TABLE_TYPE");
        }
      });
      step("getColumns t_dml", () -> {
        try (ResultSet rs = s.c().getMetaData().getColumns(db, null, "t_dml", "%")) {
          rows(rs, "COLUMN_NAME", "TYPE_NAME", "DATA_TYPE", "COLUMN_SIZE", "DECIMAL_DIGITS", "IS_NULLABLE",
              "IS_AUTOINCREMENT");
        }
      });
      step("getPrimaryKeys / getIndexInfo t_dml", () -> {
        try (ResultSet rs = s.c().getMetaData().getPrimaryKeys(db, null, "t_dml")) {
          rows(rs, "COLUMN_NAME", "KEY_SEQ");
        }
        try (ResultSet rs = s.c().getMetaData().getIndexInfo(db, null, "t_dml", false, false)) {
          rows(rs, "INDEX_NAME", "NON_UNIQUE", "COLUMN_NAME");
        }
      });
      step("getProcedures / getProcedureColumns p_out", () -> {
        try (ResultSet rs = s.c().getMetaData().getProcedures(db, null, "%")) {
          rows(rs, "PROCEDURE_NAME", "PROCEDURE_TYPE");
        }
        try (ResultSet rs = s.c().getMetaData().getProcedureColumns(db, null, "p_out", "%")) {
          rows(rs, "COLUMN_NAME", "COLUMN_TYPE", "TYPE_NAME");
        }
      });
    }
  }

  // ---------------------------------------------------------------- timeouts

  static void timeoutAndCancel() throws Exception {
    try (Sess s = new Sess("")) {
      step("setQueryTimeout(1): SELECT SLEEP(3)", () -> {
        try (Statement st = s.c().createStatement()) {
          st.setQueryTimeout(1);
          try (ResultSet rs = st.executeQuery("SELECT SLEEP(3) AS slept")) {
            dump(rs);
          }
        }
      });
      q(s, "SELECT 'after query timeout' AS ok");
      step("Statement.cancel() of SELECT SLEEP(5) after 1 s (KILL QUERY on a new connection)", () -> {
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try (Statement st = s.c().createStatement()) {
          Future<String> f = ex.submit(() -> {
            try (ResultSet rs = st.executeQuery("SELECT SLEEP(5) AS slept")) {
              rs.next();
              return "slept " + rs.getString(1);
            } catch (SQLException e) {
              return "ERROR " + errText(e);
            }
          });
          Thread.sleep(1000);
          st.cancel();
          out.println("  cancel sent");
          out.println("  " + f.get(30, TimeUnit.SECONDS));
        } catch (Exception e) {
          out.println("  ERROR " + errText(e));
        } finally {
          ex.shutdownNow();
        }
      });
      q(s, "SELECT 'after cancel' AS ok");
    }
  }

  // ---------------------------------------------------------------- compression

  static void compression() throws Exception {
    try (Sess s = new Sess("useCompression=true")) {
      q(s, "SELECT id, i, vc, dtm6 FROM t_types ORDER BY id");
      step("SELECT REPEAT('z', 1 MiB) compressed", () -> {
        try (Statement st = s.c().createStatement();
            ResultSet rs = st.executeQuery("SELECT REPEAT('z', 1024 * 1024) AS z")) {
          bigRead(rs);
        }
      });
    }
    try (Sess s = new Sess("useCompression=true&useServerPrepStmts=true")) {
      pq(s, "SELECT id, i, vc, dtm6 FROM t_types WHERE id IN (1, 2) ORDER BY id");
    }
  }
}
