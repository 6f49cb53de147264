// bench/drivers/Drivers.java: short transactions through sluice with MariaDB Connector/J (JDBC),
// for bench/run.sh's part "drivers"; the Java twin of pdo.php (same environment, same JSON line),
// with DRV_CLIENTS threads (DRV_MODE short: each runs DRV_N sessions of one transaction; long:
// each holds one connection for DRV_N transactions). Connector/J's defaults otherwise (client-side
// prepared statements: text protocol); DRV_JDBC_OPTS (k=v&k=v) adds options to the JDBC URL. Exit 1
// when anything failed.

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

public class Drivers {
  static String url, user, pass, mode;
  static int n, rows;

  // Totals over the threads, under Drivers.class's lock.
  static int sessions, transactions, pinnedSessions, errors;
  static String firstError = "", startupPins = null;
  static final Map<String, Integer> pinCount = new TreeMap<>();

  static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) {
      System.err.println("Drivers: " + name + " is not set");
      System.exit(2);
    }
    return v;
  }

  // What SLUICE SHOW LAST ROUTE says holds the session now.
  static List<String> pins(Connection c) throws Exception {
    try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SLUICE SHOW LAST ROUTE")) {
      r.next();
      String p = r.getString("pins");
      return p == null || p.isEmpty() ? List.of() : Arrays.asList(p.split(","));
    }
  }

  static void transaction(Connection c) throws Exception {
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    int id = 1 + rnd.nextInt(rows);
    c.setAutoCommit(false);
    try (PreparedStatement s = c.prepareStatement("SELECT c FROM sbtest1 WHERE id = ?");
        PreparedStatement u = c.prepareStatement("UPDATE sbtest1 SET k = k + 1 WHERE id = ?")) {
      s.setInt(1, id);
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {}
      }
      u.setInt(1, id);
      u.executeUpdate();
      s.setInt(1, 1 + rnd.nextInt(rows));
      try (ResultSet r = s.executeQuery()) {
        while (r.next()) {}
      }
      c.commit();
    } finally {
      c.setAutoCommit(true);
    }
  }

  static void worker() {
    int sessionsToRun = mode.equals("short") ? n : 1;
    int perSession = mode.equals("short") ? 1 : n;
    for (int i = 0; i < sessionsToRun; i++) {
      List<String> seen = new ArrayList<>();
      int tx = 0;
      String err = null;
      boolean done = false;
      String startup = null;
      try (Connection c = DriverManager.getConnection(url, user, pass)) {
        List<String> p = pins(c);
        startup = String.join(",", p);
        seen.addAll(p);
        for (int t = 0; t < perSession; t++) {
          transaction(c);
          tx++;
          for (String q : pins(c)) {
            if (!seen.contains(q)) seen.add(q);
          }
        }
        done = true;
      } catch (Exception e) {
        err = e.getClass().getName() + ": " + e.getMessage();
      }
      synchronized (Drivers.class) {
        transactions += tx;
        if (done) sessions++;
        if (err != null) {
          errors++;
          if (firstError.isEmpty()) firstError = err;
        }
        if (startupPins == null && startup != null) startupPins = startup;
        if (!seen.isEmpty()) {
          pinnedSessions++;
          for (String q : seen) pinCount.merge(q, 1, Integer::sum);
        }
      }
    }
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      if (ch == '"' || ch == '\\') b.append('\\').append(ch);
      else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
      else b.append(ch);
    }
    return b.append('"').toString();
  }

  public static void main(String[] args) throws Exception {
    String host = env("DRV_HOST");
    if (!host.equals("127.0.0.1")) {
      System.err.println("Drivers: DRV_HOST must be 127.0.0.1");
      System.exit(2);
    }
    mode = env("DRV_MODE");
    n = Integer.parseInt(env("DRV_N"));
    rows = Integer.parseInt(env("DRV_ROWS"));
    int clients = Integer.parseInt(env("DRV_CLIENTS"));
    if (n < 1 || rows < 1 || clients < 1 || !(mode.equals("short") || mode.equals("long"))) {
      System.err.println("Drivers: DRV_N, DRV_ROWS, DRV_CLIENTS must be positive, DRV_MODE short or long");
      System.exit(2);
    }
    user = env("DRV_USER");
    pass = System.getenv("DRV_PASSWORD") == null ? "" : System.getenv("DRV_PASSWORD");
    url = "jdbc:mariadb://127.0.0.1:" + env("DRV_PORT") + "/" + env("DRV_DB") + "?connectTimeout=10000&socketTimeout=20000"
        + (System.getenv("DRV_JDBC_OPTS") == null ? "" : "&" + System.getenv("DRV_JDBC_OPTS"));
    Thread[] ts = new Thread[clients];
    for (int i = 0; i < clients; i++) {
      ts[i] = new Thread(Drivers::worker);
      ts[i].start();
    }
    for (Thread t : ts) t.join();
    StringBuilder pins = new StringBuilder("{");
    for (Map.Entry<String, Integer> e : pinCount.entrySet()) {
      if (pins.length() > 1) pins.append(", ");
      pins.append(quote(e.getKey())).append(": ").append(e.getValue());
    }
    pins.append('}');
    System.out.println("{\"driver\": \"connectorj\", \"mode\": " + quote(mode) + ", \"sessions\": " + sessions
        + ", \"transactions\": " + transactions + ", \"pinned_sessions\": " + pinnedSessions + ", \"pins\": " + pins
        + ", \"startup_pins\": " + (startupPins == null ? "null" : quote(startupPins)) + ", \"errors\": " + errors
        + ", \"first_error\": " + quote(firstError) + "}");
    System.exit(errors > 0 ? 1 : 0);
  }
}
