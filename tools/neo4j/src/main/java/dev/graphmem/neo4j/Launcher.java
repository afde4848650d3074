package dev.graphmem.neo4j;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.QueryExecutionException;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.io.ByteUnit;
import org.neo4j.kernel.api.impl.index.LuceneSettings;

/**
 * Runs Neo4j Community in-process with a Bolt listener on 127.0.0.1, for
 * graphmem's development and tests.
 *
 * <p>Configuration (environment variables):
 * <ul>
 *   <li>{@code GRAPHMEM_NEO4J_HOME}: home folder for data and logs (or the first argument; required)</li>
 *   <li>{@code GRAPHMEM_NEO4J_PORT}: Bolt port, default 7687</li>
 *   <li>{@code NEO4J_PASSWORD}: password of user {@code neo4j}, default {@code graphmem-test}</li>
 *   <li>{@code GRAPHMEM_NEO4J_PAGECACHE}: page cache size, default {@code 256m}</li>
 *   <li>{@code GRAPHMEM_NEO4J_VECTOR_MERGE_FACTOR}: vector index segments merged at once, default 4</li>
 *   <li>{@code GRAPHMEM_NEO4J_VECTOR_BUFFER_MB}: heap buffer (MB) of a vector index build, default 512</li>
 * </ul>
 *
 * <p>{@code LOAD CSV} from {@code file:///} URLs is off
 * ({@code dbms.security.allow_csv_import_from_file_urls=false}).
 *
 * <p>Prints {@code graphmem-neo4j ready bolt://127.0.0.1:PORT} on stdout once Bolt accepts
 * connections. SIGTERM/SIGINT shut the DBMS down cleanly.
 */
public final class Launcher {

    private static final String HOST = "127.0.0.1";
    private static final String USER = "neo4j";
    private static final int MIN_PASSWORD_LENGTH = 8;
    private static final long AVAILABLE_TIMEOUT_MS = 120_000;
    private static final long BOLT_PROBE_TIMEOUT_MS = 60_000;
    private static final long BUILD_WAIT_ON_SHUTDOWN_MS = 120_000;

    private Launcher() {
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            System.err.println("graphmem-neo4j failed: " + t);
            t.printStackTrace(System.err);
            System.err.flush();
            // halt, not exit: by now the DBMS is shut down (or was never built), and
            // leftover non-daemon threads must not keep the JVM alive.
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(String[] args) throws Exception {
        String homeValue = args.length > 0 ? args[0] : env("GRAPHMEM_NEO4J_HOME", null);
        if (homeValue == null || homeValue.isBlank()) {
            System.err.println("usage: Launcher HOME (or set GRAPHMEM_NEO4J_HOME)");
            Runtime.getRuntime().halt(2);
        }
        Path home = Path.of(homeValue).toAbsolutePath().normalize();
        int port = parsePort(env("GRAPHMEM_NEO4J_PORT", "7687"));
        String password = env("NEO4J_PASSWORD", "graphmem-test");
        if (password.length() < MIN_PASSWORD_LENGTH) {
            throw new IllegalArgumentException(
                    "NEO4J_PASSWORD must have at least " + MIN_PASSWORD_LENGTH + " characters");
        }
        long pageCache = ByteUnit.parse(env("GRAPHMEM_NEO4J_PAGECACHE", "256m"));

        Files.createDirectories(home);
        Path logs = home.resolve("logs");
        Files.createDirectories(logs);

        Map<Setting<?>, Object> config = new HashMap<>();
        config.put(GraphDatabaseSettings.auth_enabled, true);
        config.put(GraphDatabaseSettings.logs_directory, logs);
        config.put(GraphDatabaseSettings.pagecache_memory, pageCache);
        config.put(GraphDatabaseSettings.udc_enabled, false);
        config.put(GraphDatabaseSettings.preallocate_logical_logs, false);
        config.put(BoltConnector.enabled, true);
        config.put(BoltConnector.listen_address, new SocketAddress(HOST, port));
        config.put(BoltConnector.advertised_address, new SocketAddress(HOST, port));
        config.put(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED);
        config.put(HttpConnector.enabled, false);
        config.put(HttpsConnector.enabled, false);
        // LOAD CSV may not read this machine's files (file:/// URLs): graphmem never imports CSV,
        // and the import folder would default to this home, next to the data. graphmem's analyst
        // Cypher refuses LOAD CSV anyway; this covers every other client of the server. No
        // server-wide transaction timeout (db.transaction.timeout): it would also stop graphmem's
        // own long writes, so analyst queries carry their own.
        config.put(GraphDatabaseSettings.allow_file_urls, false);

        // Vector index segments: a query searches every segment's HNSW graph, so their number sets
        // the search cost. Neo4j merges only once 50 segments pile up (26-44 segments at 100k
        // memories: queryNodes of 100 rows took 28 ms); merging at 4 keeps a handful (10 ms), for
        // more merge work on write. GRAPHMEM_NEO4J_VECTOR_MERGE_FACTOR overrides it.
        int mergeFactor = Integer.parseInt(env("GRAPHMEM_NEO4J_VECTOR_MERGE_FACTOR", "4"));
        config.put(LuceneSettings.vector_standard_merge_factor, mergeFactor);
        config.put(LuceneSettings.vector_population_merge_factor, mergeFactor);
        double populationBuffer = Double.parseDouble(env("GRAPHMEM_NEO4J_VECTOR_BUFFER_MB", "512"));
        config.put(LuceneSettings.vector_population_ram_buffer_size, populationBuffer);

        // Re-planning: Neo4j plans a statement again once it is older than this and the data have
        // changed enough since. A store filling from empty (a test run) re-plans graphmem's search
        // statements (seconds of CPU each) hundreds of times; GRAPHMEM_NEO4J_MIN_REPLAN (seconds)
        // lengthens the interval. Unset: Neo4j's own default.
        String minReplan = env("GRAPHMEM_NEO4J_MIN_REPLAN", "");
        if (!minReplan.isEmpty()) {
            config.put(GraphDatabaseSettings.cypher_min_replan_interval, Duration.ofSeconds(Long.parseLong(minReplan)));
        }

        log("starting Neo4j (home " + home + ", bolt " + HOST + ":" + port
                + ", page cache " + pageCache + " bytes)");
        long started = System.nanoTime();

        // The hook is registered before the DBMS is built, so a SIGTERM that arrives
        // during startup still leads to a clean shutdown (it waits for build() first).
        CountDownLatch built = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicReference<DatabaseManagementService> dbmsRef = new AtomicReference<>();
        AtomicBoolean shutdownStarted = new AtomicBoolean();
        Runnable shutdown = () -> {
            if (!shutdownStarted.compareAndSet(false, true)) {
                return;
            }
            try {
                if (!built.await(BUILD_WAIT_ON_SHUTDOWN_MS, TimeUnit.MILLISECONDS)) {
                    log("still starting after " + BUILD_WAIT_ON_SHUTDOWN_MS
                            + " ms; exiting without a clean shutdown");
                    return;
                }
                DatabaseManagementService dbms = dbmsRef.get();
                if (dbms == null) {
                    return;
                }
                log("shutting down");
                dbms.shutdown();
                log("stopped");
            } catch (Throwable t) {
                System.err.println("graphmem-neo4j: error during shutdown: " + t);
                t.printStackTrace(System.err);
            } finally {
                System.out.flush();
                System.err.flush();
                stopped.countDown();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(shutdown, "graphmem-neo4j-shutdown"));

        try {
            dbmsRef.set(new DatabaseManagementServiceBuilder(home).setConfig(config).build());
        } finally {
            built.countDown();
        }

        try {
            DatabaseManagementService dbms = dbmsRef.get();
            GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
            awaitAvailable(system, GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
            setPassword(system, password);
            GraphDatabaseService neo4j = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            awaitAvailable(neo4j, GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            awaitBolt(port);
        } catch (Throwable t) {
            if (shutdownStarted.get()) {
                // SIGTERM arrived during startup: the hook is shutting down; let it finish.
                stopped.await();
                return;
            }
            shutdown.run();
            throw t;
        }
        if (shutdownStarted.get()) {
            stopped.await();
            return;
        }

        long ms = (System.nanoTime() - started) / 1_000_000;
        log("started in " + ms + " ms, pid " + ProcessHandle.current().pid());
        System.out.println("graphmem-neo4j ready bolt://" + HOST + ":" + port);
        System.out.flush();

        stopped.await();
    }

    /** Sets the password of user neo4j; a password equal to the stored one is fine. */
    private static void setPassword(GraphDatabaseService system, String password) {
        Map<String, Object> params = Map.of("pw", password);
        try {
            system.executeTransactionally(
                    "ALTER USER " + USER + " SET PASSWORD $pw CHANGE NOT REQUIRED", params);
            log("password of user " + USER + " set");
        } catch (QueryExecutionException e) {
            String message = String.valueOf(e.getMessage());
            if (!message.contains("cannot be the same")) {
                throw e;
            }
            // Same password as before (a restart on the same home): just make sure
            // no password change is demanded on login.
            system.executeTransactionally(
                    "ALTER USER " + USER + " SET PASSWORD CHANGE NOT REQUIRED");
            log("password of user " + USER + " already set");
        }
    }

    private static void awaitAvailable(GraphDatabaseService db, String name) {
        if (!db.isAvailable(AVAILABLE_TIMEOUT_MS)) {
            throw new IllegalStateException(
                    "database '" + name + "' not available after " + AVAILABLE_TIMEOUT_MS + " ms");
        }
    }

    private static void awaitBolt(int port) throws InterruptedException {
        long deadline = System.currentTimeMillis() + BOLT_PROBE_TIMEOUT_MS;
        IOException last = null;
        while (System.currentTimeMillis() < deadline) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(HOST, port), 1000);
                return;
            } catch (IOException e) {
                last = e;
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException(
                "Bolt did not accept connections on " + HOST + ":" + port, last);
    }

    private static int parsePort(String value) {
        int port;
        try {
            port = Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("GRAPHMEM_NEO4J_PORT is not a number: " + value, e);
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("GRAPHMEM_NEO4J_PORT out of range: " + value);
        }
        return port;
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    private static void log(String message) {
        System.err.println("graphmem-neo4j: " + message);
        System.err.flush();
    }
}
