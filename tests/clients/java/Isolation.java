import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;

/**
 * CB_MODE=isolation (tests/clients/README.md): client A sets every kind of session state, with
 * Connector/J's own API where it has one (setCatalog, setTransactionIsolation, setAutoCommit,
 * server-side prepared statements), and goes idle or leaves; client B opens and prints what it
 * sees (the server's defaults, its own); A prints its own state again. Directly these are two
 * server connections; through sluice at pool max_per_node 1 one node connection
 * (scripts/client-isolation.sh). Single-threaded: called from Battery.main only.
 */
final class Isolation {
  private Isolation() {}

  static final String PROBE =
      "SELECT DATABASE() AS db, @@session.sql_mode AS sql_mode, "
          + "@@session.max_statement_time AS max_statement_time, @@character_set_client AS cs_client, "
          + "@@character_set_connection AS cs_connection, @@character_set_results AS cs_results, "
          + "@@collation_connection AS collation, @@session.tx_isolation AS isolation, "
          + "@@session.time_zone AS time_zone, @@autocommit AS autocommit, @@in_transaction AS in_tx, "
          + "@cb_iso_s AS uv_s, @cb_iso_n AS uv_n, LAST_INSERT_ID() AS last_id";

  interface Step {
    void run() throws Exception;
  }

  static void p(String s) {
    Battery.out.println(s);
  }

  static void step(String label, Step s) {
    p("-- " + label);
    try {
      s.run();
    } catch (Exception e) {
      p("  exception: " + Battery.errText(e));
    }
  }

  /** open connects with server-side prepares, to database db ("" for none). */
  static Connection open(String database) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", Battery.user);
    props.setProperty("password", Battery.pass);
    String url =
        "jdbc:mariadb://" + Battery.host + ":" + Battery.port + "/" + database
            + "?socketTimeout=" + Battery.SOCKET_TIMEOUT_MS
            + "&connectTimeout=10000&useServerPrepStmts=true";
    return DriverManager.getConnection(url, props);
  }

  static void rows(ResultSet rs) throws SQLException {
    ResultSetMetaData md = rs.getMetaData();
    while (rs.next()) {
      for (int i = 1; i <= md.getColumnCount(); i++) {
        String v = rs.getString(i);
        p("  " + md.getColumnLabel(i) + "=" + (v == null ? "NULL" : v));
      }
    }
  }

  /** q runs sql and prints its rows, or its error. */
  static void q(Connection c, String sql) {
    try (Statement st = c.createStatement()) {
      if (st.execute(sql)) {
        try (ResultSet rs = st.getResultSet()) {
          rows(rs);
        }
      } else {
        p("  ok affected=" + st.getUpdateCount());
      }
    } catch (SQLException e) {
      p("  error " + e.getErrorCode() + " " + e.getSQLState() + " " + Battery.clean(e.getMessage()));
    }
  }

  static void exec(PreparedStatement ps, int arg) throws SQLException {
    ps.setInt(1, arg);
    try (ResultSet rs = ps.executeQuery()) {
      rows(rs);
    }
  }

  static void set(Connection a) {
    step(
        "A sets database, charset, session variables, isolation, time zone, user variables",
        () -> {
          a.setCatalog(Battery.db);
          q(a, "SET NAMES latin1");
          q(a, "SET SESSION sql_mode = 'ANSI_QUOTES,NO_ZERO_DATE', max_statement_time = 7");
          a.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
          q(a, "SET time_zone = '+03:00'");
          q(a, "SET @cb_iso_s = 'A-string', @cb_iso_n = 42");
        });
    step(
        "A autocommit off, an insert (LAST_INSERT_ID), commit",
        () -> {
          a.setAutoCommit(false);
          try (Statement st = a.createStatement()) {
            st.executeUpdate(
                "INSERT INTO cb_iso_t (v) VALUES ('A')", Statement.RETURN_GENERATED_KEYS);
            try (ResultSet k = st.getGeneratedKeys()) {
              while (k.next()) p("  insert id " + k.getLong(1));
            }
          }
          a.commit();
        });
  }

  static void idle() throws SQLException {
    p("== connectorj isolation idle");
    try (Connection a = open("")) {
      set(a);
      PreparedStatement[] ps = new PreparedStatement[1];
      step(
          "A prepares a binary statement",
          () -> {
            ps[0] = a.prepareStatement("SELECT ? + 1 AS p");
            exec(ps[0], 41);
          });
      step("A probe", () -> q(a, PROBE));
      a.commit();
      try (Connection b = open("")) {
        step("B probe (defaults)", () -> q(b, PROBE));
        step("B warnings", () -> q(b, "SHOW WARNINGS"));
        step(
            "B sets its own",
            () -> {
              q(b, "SET time_zone = '-02:00', sql_mode = ''");
              q(b, "SET @cb_iso_s = 'B-string'");
              try (PreparedStatement bs = b.prepareStatement("SELECT ? * 2 AS p")) {
                exec(bs, 21);
              }
              q(b, PROBE);
            });
        step("A probe again", () -> q(a, PROBE));
        step(
            "A executes its statement again",
            () -> {
              if (ps[0] == null) p("  none");
              else exec(ps[0], 99);
            });
        step("A reads its table", () -> q(a, "SELECT v FROM cb_iso_t ORDER BY id"));
        a.commit();
      }
    }
  }

  static void leave() throws SQLException {
    p("== connectorj isolation leave");
    try (Connection a = open("")) {
      set(a);
      step(
          "A pins: temporary table, GET_LOCK, SQL PREPARE, binary prepare",
          () -> {
            q(a, "CREATE TEMPORARY TABLE cb_iso_tmp (a INT)");
            q(a, "INSERT INTO cb_iso_tmp VALUES (1)");
            q(a, "SELECT GET_LOCK('cb_iso_lock', 0) AS got");
            q(a, "PREPARE cb_iso_p FROM 'SELECT 1 AS one'");
            try (PreparedStatement ps = a.prepareStatement("SELECT ? + 1 AS p")) {
              exec(ps, 1);
            }
          });
      step(
          "A opens a transaction, inserts, warns",
          () -> {
            a.setAutoCommit(true);
            a.setAutoCommit(false);
            q(a, "INSERT INTO cb_iso_t (v) VALUES ('A-uncommitted')");
            q(a, "SELECT CAST('1x' AS SIGNED) AS w");
            q(a, "SHOW WARNINGS");
            q(a, PROBE);
          });
    }
    try (Connection b = open("")) {
      step("B warnings", () -> q(b, "SHOW WARNINGS"));
      step("B probe (defaults)", () -> q(b, PROBE));
      step("B reads A's temporary table", () -> q(b, "SELECT a FROM " + Battery.db + ".cb_iso_tmp"));
      step(
          "B takes A's lock",
          () -> {
            q(b, "SELECT GET_LOCK('cb_iso_lock', 10) AS got");
            q(b, "SELECT RELEASE_LOCK('cb_iso_lock') AS released");
          });
      step("B executes A's SQL prepared statement", () -> q(b, "EXECUTE cb_iso_p"));
      step(
          "B reads A's uncommitted row",
          () ->
              q(
                  b,
                  "SELECT COUNT(*) AS n FROM "
                      + Battery.db
                      + ".cb_iso_t WHERE v = 'A-uncommitted'"));
    }
  }

  static void locked() throws SQLException {
    p("== connectorj isolation locked");
    try (Connection a = open(Battery.db)) {
      step(
          "A LOCK TABLES, insert",
          () -> {
            q(a, "LOCK TABLES cb_iso_t WRITE");
            q(a, "INSERT INTO cb_iso_t (v) VALUES ('A-locked')");
          });
    }
    try (Connection b = open(Battery.db)) {
      step(
          "B writes the table",
          () -> {
            q(b, "SET SESSION lock_wait_timeout = 10");
            q(b, "INSERT INTO cb_iso_t (v) VALUES ('B-after-lock')");
            q(b, "SELECT v FROM cb_iso_t ORDER BY id");
          });
    }
  }

  static void run() throws SQLException {
    p("# java isolation, Connector/J");
    // Quiet: whether the table existed before differs between runs (a note).
    try (Connection c = open(Battery.db);
        Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS cb_iso_t");
      st.execute("CREATE TABLE cb_iso_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))");
    }
    String rounds = System.getenv().getOrDefault("CB_ROUNDS", "");
    if (rounds.isBlank()) rounds = "idle leave locked";
    for (String r : rounds.trim().split("[\\s,]+")) {
      switch (r) {
        case "idle" -> idle();
        case "leave" -> leave();
        case "locked" -> locked();
        default -> throw new IllegalArgumentException("CB_ROUNDS: unknown round '" + r + "'");
      }
    }
    p("# end");
  }
}
