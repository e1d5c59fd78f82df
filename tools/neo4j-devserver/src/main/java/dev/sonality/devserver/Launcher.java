package dev.sonality.devserver;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.SettingValueParsers;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilder;
import org.neo4j.harness.Neo4jBuilders;
import org.neo4j.server.configuration.ServerSettings;

/**
 * Docker-free Neo4j (Community, via neo4j-harness) for Sonality tests and development.
 *
 * <p>Usage: {@code Launcher [--bolt-port N] [--http-port N] [--data-dir PATH] [--page-cache 64m]
 * [--browser-post-connect-cmd CMD]}
 *
 * <p>Prints exactly one line {@code NEO4J_DEVSERVER_READY bolt=bolt://127.0.0.1:<p> http=http://127.0.0.1:<p>}
 * to stdout once Bolt and HTTP accept connections, then runs until SIGTERM/SIGINT, on which it shuts the
 * database down cleanly (and deletes its temporary directory when no --data-dir was given).
 * On failure it prints {@code NEO4J_DEVSERVER_FAILED <reason>} to stderr and exits non-zero.
 */
public final class Launcher {
    private static final String HOST = "127.0.0.1";
    /** The harness names its scratch folder with a random md5 hex string (and deletes only such folders). */
    private static final Pattern HARNESS_SCRATCH = Pattern.compile("[0-9a-f]{32}");

    private static final int EXIT_USAGE = 2;
    private static final int EXIT_PORT_IN_USE = 3;
    private static final int EXIT_START_FAILED = 1;

    /** Held for the life of the JVM so two dev servers never share a --data-dir. */
    private static FileLock dataDirLock;

    private Launcher() {}

    static final class Options {
        int boltPort = 7687;
        int httpPort = 7474;
        Path dataDir;
        String pageCache = "64m";
        String browserPostConnectCmd;
    }

    public static void main(String[] args) {
        Options opts;
        try {
            opts = parse(args);
        } catch (IllegalArgumentException e) {
            fail(EXIT_USAGE, e.getMessage() + "\n" + usage());
            return;
        }
        if (opts == null) {
            System.out.println(usage());
            return;
        }
        run(opts);
    }

    private static String usage() {
        return "usage: neo4j-devserver [--bolt-port N] [--http-port N] [--data-dir PATH] [--page-cache SIZE]"
                + " [--browser-post-connect-cmd CMD]\n"
                + "  ports default to 7687/7474 (0 = pick a free port); without --data-dir a temporary"
                + " directory is used and deleted on exit; --page-cache defaults to 64m.";
    }

    static Options parse(String[] args) {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            if (name.equals("-h") || name.equals("--help")) {
                return null;
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing value for " + name);
                }
                value = args[++i];
            }
            switch (name) {
                case "--bolt-port" -> o.boltPort = port(name, value);
                case "--http-port" -> o.httpPort = port(name, value);
                case "--data-dir" -> o.dataDir = Path.of(value).toAbsolutePath().normalize();
                case "--page-cache" -> o.pageCache = value;
                case "--browser-post-connect-cmd" -> o.browserPostConnectCmd = value;
                default -> throw new IllegalArgumentException("unknown argument: " + a);
            }
        }
        return o;
    }

    private static int port(String name, String value) {
        try {
            int p = Integer.parseInt(value);
            if (p < 0 || p > 65535) {
                throw new NumberFormatException();
            }
            return p;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a port number 0-65535, got '" + value + "'");
        }
    }

    private static void run(Options opts) {
        checkPortFree("bolt", opts.boltPort);
        checkPortFree("http", opts.httpPort);
        if (opts.boltPort != 0 && opts.boltPort == opts.httpPort) {
            fail(EXIT_USAGE, "--bolt-port and --http-port must differ");
        }

        long pageCache;
        try {
            pageCache = SettingValueParsers.BYTES.parse(opts.pageCache);
        } catch (RuntimeException e) {
            fail(EXIT_USAGE, "invalid --page-cache '" + opts.pageCache + "': " + e.getMessage());
            return;
        }

        Path tempDir = null;
        Neo4jBuilder builder;
        try {
            if (opts.dataDir != null) {
                // The harness always works in a random <md5> subfolder of the directory it is given and deletes
                // it on close, so the database itself is pointed at <data-dir>/data to make it persistent.
                Files.createDirectories(opts.dataDir);
                dataDirLock = lockDataDir(opts.dataDir);
                Path scratch = opts.dataDir.resolve("harness");
                Files.createDirectories(scratch);
                removeStaleScratch(scratch);
                Files.createDirectories(opts.dataDir.resolve("logs"));
                builder = Neo4jBuilders.newInProcessBuilder(scratch)
                        .withConfig(GraphDatabaseSettings.data_directory, opts.dataDir.resolve("data"))
                        .withConfig(GraphDatabaseSettings.logs_directory, opts.dataDir.resolve("logs"));
            } else {
                tempDir = Files.createTempDirectory("neo4j-devserver-");
                builder = Neo4jBuilders.newInProcessBuilder(tempDir);
            }
        } catch (IOException e) {
            fail(EXIT_START_FAILED, "cannot prepare data directory: " + e);
            return;
        }

        builder.withConfig(GraphDatabaseSettings.auth_enabled, false)
                .withConfig(GraphDatabaseSettings.pagecache_memory, pageCache)
                .withConfig(GraphDatabaseSettings.udc_enabled, false)
                .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .withConfig(GraphDatabaseSettings.default_listen_address, new SocketAddress(HOST))
                .withConfig(GraphDatabaseSettings.default_advertised_address, new SocketAddress(HOST))
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress(HOST, opts.boltPort))
                .withConfig(BoltConnector.advertised_address, new SocketAddress(HOST, opts.boltPort))
                .withConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .withConfig(HttpConnector.enabled, true)
                .withConfig(HttpConnector.listen_address, new SocketAddress(HOST, opts.httpPort))
                .withConfig(HttpConnector.advertised_address, new SocketAddress(HOST, opts.httpPort))
                .withConfig(HttpsConnector.enabled, false)
                // Neo4j Browser / Bloom product analytics off.
                .withConfig(ServerSettings.allow_telemetry, false)
                // Netty waits a 5 s quiet period per Bolt event loop group on shutdown (~10 s in total);
                // a dev server has no in-flight work worth waiting for.
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(5));
        if (opts.browserPostConnectCmd != null) {
            builder.withConfig(ServerSettings.browser_post_connect_cmd, opts.browserPostConnectCmd);
        }

        Server server = new Server(tempDir);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "neo4j-devserver-shutdown"));

        Neo4j neo4j;
        try {
            neo4j = builder.build();
        } catch (Throwable t) {
            server.close();
            int code = isBindFailure(t) ? EXIT_PORT_IN_USE : EXIT_START_FAILED;
            fail(code, "Neo4j failed to start: " + describe(t));
            return;
        }
        if (!server.attach(neo4j)) {
            return; // shutdown already in progress (signal arrived during start-up)
        }

        String bolt = "bolt://" + HOST + ":" + neo4j.boltURI().getPort();
        String http = "http://" + HOST + ":" + neo4j.httpURI().getPort();
        PrintStream out = System.out;
        out.println("NEO4J_DEVSERVER_READY bolt=" + bolt + " http=" + http);
        out.flush();

        try {
            new CountDownLatch(1).await(); // until a signal runs the shutdown hook and exits the JVM
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Owns the running instance and the temporary directory; close() is idempotent and safe from any thread. */
    private static final class Server {
        private final Path tempDir;
        private Neo4j neo4j;
        private boolean closed;

        Server(Path tempDir) {
            this.tempDir = tempDir;
        }

        synchronized boolean attach(Neo4j instance) {
            if (closed) {
                instance.close();
                return false;
            }
            this.neo4j = instance;
            return true;
        }

        synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            if (neo4j != null) {
                try {
                    neo4j.close();
                    System.err.println("neo4j-devserver: shut down cleanly");
                } catch (Throwable t) {
                    System.err.println("neo4j-devserver: error during shutdown: " + describe(t));
                }
                neo4j = null;
            }
            if (tempDir != null) {
                deleteRecursively(tempDir);
            }
        }
    }

    private static void checkPortFree(String what, int port) {
        if (port == 0) {
            return;
        }
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
        } catch (IOException e) {
            fail(EXIT_PORT_IN_USE, what + " port " + HOST + ":" + port + " is not available (" + e.getMessage() + ")");
        }
    }

    private static boolean isBindFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            String n = c.getClass().getName();
            if (c instanceof java.net.BindException || n.endsWith("PortBindException")) {
                return true;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return false;
    }

    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        int depth = 0;
        for (Throwable c = t; c != null && depth < 8; c = c.getCause(), depth++) {
            if (depth > 0) {
                sb.append("\n  caused by: ");
            }
            sb.append(c.getClass().getName()).append(": ").append(c.getMessage());
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString();
    }

    private static FileLock lockDataDir(Path dataDir) throws IOException {
        Path lockFile = dataDir.resolve("devserver.lock");
        FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = channel.tryLock();
        if (lock == null) {
            channel.close();
            fail(EXIT_START_FAILED, "data dir " + dataDir + " is in use by another neo4j-devserver (" + lockFile + ")");
        }
        return lock;
    }

    private static void removeStaleScratch(Path scratch) throws IOException {
        // Leftovers of a previous run that was killed (SIGKILL) before the harness could clean up.
        try (Stream<Path> children = Files.list(scratch)) {
            children.filter(p -> Files.isDirectory(p)
                            && HARNESS_SCRATCH.matcher(p.getFileName().toString()).matches())
                    .forEach(Launcher::deleteRecursively);
        }
    }

    private static void deleteRecursively(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort
                }
            });
        } catch (IOException ignored) {
            // best effort
        }
    }

    private static void fail(int code, String message) {
        System.err.println("NEO4J_DEVSERVER_FAILED " + message);
        System.err.flush();
        System.exit(code);
    }
}
