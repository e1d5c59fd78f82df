package dev.sonality.devserver;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Docker-free Neo4j (Community, via neo4j-harness) for Sonality tests and development.
 *
 * <p>One launcher for every Neo4j line the dev server supports (5.26 LTS on Java 17, 2026.x on Java 21):
 * it is compiled {@code --release 17} with no Neo4j class on the compile path and drives the harness
 * reflectively, through the few entry points that exist unchanged in both lines
 * ({@code Neo4jBuilders.newInProcessBuilder(Path)}, {@code Neo4jBuilder.withConfig(Setting, Object)},
 * {@code build()}, {@code Neo4j.boltURI()/httpURI()}). Settings are set by their neo4j.conf names, looked up
 * in {@code Config.defaults().getDeclaredSettings()} and parsed by the setting itself, so no Java field
 * name or value class of either line is baked in.
 *
 * <p>Usage: {@code Launcher [--bolt-port N] [--http-port N] [--data-dir PATH] [--page-cache 64m]
 * [--browser-post-connect-cmd CMD] [--config NAME=VALUE ...]}
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
        /** Further settings by their neo4j.conf names ({@code --config NAME=VALUE}, repeatable). */
        final Map<String, String> config = new LinkedHashMap<>();
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
                + " [--browser-post-connect-cmd CMD] [--config NAME=VALUE ...]\n"
                + "  ports default to 7687/7474 (0 = pick a free port); without --data-dir a temporary"
                + " directory is used and deleted on exit; --page-cache defaults to 64m; --config sets any"
                + " setting this Neo4j declares (by its neo4j.conf name) and may be repeated.";
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
                case "--config" -> {
                    int split = value.indexOf('=');
                    if (split <= 0) {
                        throw new IllegalArgumentException("--config needs NAME=VALUE, got '" + value + "'");
                    }
                    o.config.put(value.substring(0, split), value.substring(split + 1));
                }
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

        Map<String, String> conf = new LinkedHashMap<>();
        conf.put("dbms.security.auth_enabled", "false");
        conf.put("server.memory.pagecache.size", opts.pageCache);
        conf.put("db.tx_log.preallocate", "false");
        conf.put("server.default_listen_address", HOST);
        conf.put("server.default_advertised_address", HOST);
        conf.put("server.bolt.enabled", "true");
        conf.put("server.bolt.listen_address", HOST + ":" + opts.boltPort);
        conf.put("server.bolt.advertised_address", HOST + ":" + opts.boltPort);
        conf.put("server.bolt.tls_level", "DISABLED");
        conf.put("server.http.enabled", "true");
        conf.put("server.http.listen_address", HOST + ":" + opts.httpPort);
        conf.put("server.http.advertised_address", HOST + ":" + opts.httpPort);
        conf.put("server.https.enabled", "false");
        if (opts.browserPostConnectCmd != null) {
            conf.put("browser.post_connect_cmd", opts.browserPostConnectCmd);
        }
        conf.putAll(opts.config);
        // Nice to have, absent or renamed in some lines: each group sets the first name this server declares,
        // and is skipped with a note when it declares none of them.
        String[][][] optional = {
            {{"dbms.usage_report.enabled", "false"}},
            // Neo4j Browser / Bloom product analytics off.
            {{"client.allow_telemetry", "false"}},
            // Netty waits a 5 s quiet period per Bolt event loop group on shutdown (~10 s in total);
            // a dev server has no in-flight work worth waiting for. 5.26 takes seconds, 2026.x a duration.
            {
                {"internal.dbms.bolt.netty_server_shutdown_quiet_period", "0"},
                {"internal.dbms.bolt.netty_server_shutdown_quiet_period_duration", "0s"}
            },
            {{"internal.dbms.bolt.netty_server_shutdown_timeout", "5s"}},
        };

        Harness harness;
        try {
            harness = Harness.load();
        } catch (ReflectiveOperationException | RuntimeException e) {
            fail(EXIT_START_FAILED, "neo4j-harness is not usable on this class path: " + describe(e));
            return;
        }

        Path tempDir = null;
        Object builder;
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
                builder = harness.newBuilder(scratch);
                conf.put("server.directories.data", opts.dataDir.resolve("data").toString());
                conf.put("server.directories.logs", opts.dataDir.resolve("logs").toString());
            } else {
                tempDir = Files.createTempDirectory("neo4j-devserver-");
                builder = harness.newBuilder(tempDir);
            }
        } catch (IOException | ReflectiveOperationException e) {
            fail(EXIT_START_FAILED, "cannot prepare data directory: " + describe(e));
            return;
        }

        try {
            for (Map.Entry<String, String> e : conf.entrySet()) {
                harness.configure(builder, e.getKey(), e.getValue());
            }
            for (String[][] group : optional) {
                harness.configureFirstKnown(builder, group);
            }
        } catch (IllegalArgumentException e) {
            fail(EXIT_USAGE, e.getMessage());
            return;
        } catch (ReflectiveOperationException e) {
            fail(EXIT_START_FAILED, "cannot configure neo4j-harness: " + describe(e));
            return;
        }

        Server server = new Server(tempDir);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "neo4j-devserver-shutdown"));

        AutoCloseable neo4j;
        try {
            neo4j = harness.build(builder);
        } catch (Throwable t) {
            server.close();
            int code = isBindFailure(t) ? EXIT_PORT_IN_USE : EXIT_START_FAILED;
            fail(code, "Neo4j failed to start: " + describe(t));
            return;
        }
        if (!server.attach(neo4j)) {
            return; // shutdown already in progress (signal arrived during start-up)
        }

        String bolt;
        String http;
        try {
            bolt = "bolt://" + HOST + ":" + harness.uri(neo4j, "boltURI").getPort();
            http = "http://" + HOST + ":" + harness.uri(neo4j, "httpURI").getPort();
        } catch (ReflectiveOperationException e) {
            server.close();
            fail(EXIT_START_FAILED, "cannot read the server's addresses: " + describe(e));
            return;
        }
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
        private AutoCloseable neo4j;
        private boolean closed;

        Server(Path tempDir) {
            this.tempDir = tempDir;
        }

        synchronized boolean attach(AutoCloseable instance) {
            if (closed) {
                try {
                    instance.close();
                } catch (Exception e) {
                    System.err.println("neo4j-devserver: error during shutdown: " + describe(e));
                }
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

    /**
     * The harness API, reached reflectively so one class file runs against every supported Neo4j line. Every
     * method used here exists with the same signature in neo4j-harness 5.26 and 2026.x.
     */
    private static final class Harness {
        private final Method newInProcessBuilder;
        private final Method withConfig;
        private final Method build;
        private final Map<String, Object> settings;

        private Harness(Method newInProcessBuilder, Method withConfig, Method build, Map<String, Object> settings) {
            this.newInProcessBuilder = newInProcessBuilder;
            this.withConfig = withConfig;
            this.build = build;
            this.settings = settings;
        }

        @SuppressWarnings("unchecked")
        static Harness load() throws ReflectiveOperationException {
            Class<?> builders = Class.forName("org.neo4j.harness.Neo4jBuilders");
            Class<?> builder = Class.forName("org.neo4j.harness.Neo4jBuilder");
            Class<?> setting = Class.forName("org.neo4j.graphdb.config.Setting");
            Class<?> config = Class.forName("org.neo4j.configuration.Config");
            Object defaults = config.getMethod("defaults").invoke(null);
            Map<String, Object> declared =
                    (Map<String, Object>) config.getMethod("getDeclaredSettings").invoke(defaults);
            return new Harness(
                    builders.getMethod("newInProcessBuilder", Path.class),
                    builder.getMethod("withConfig", setting, Object.class),
                    builder.getMethod("build"),
                    declared);
        }

        Object newBuilder(Path workDir) throws ReflectiveOperationException {
            return unwrap(() -> newInProcessBuilder.invoke(null, workDir));
        }

        /** Sets {@code name} from its neo4j.conf text; fails when this server declares no such setting. */
        void configure(Object builder, String name, String value) throws ReflectiveOperationException {
            Object setting = settings.get(name);
            if (setting == null) {
                throw new ReflectiveOperationException("this Neo4j declares no setting '" + name + "'");
            }
            Object parsed;
            try {
                parsed = unwrap(() -> setting.getClass().getMethod("parse", String.class).invoke(setting, value));
            } catch (RuntimeException | ReflectiveOperationException e) {
                throw new IllegalArgumentException("invalid value '" + value + "' for " + name + ": " + describe(e));
            }
            unwrap(() -> withConfig.invoke(builder, setting, parsed));
        }

        /** Sets the first {name, value} pair whose name this server declares; notes on stderr when none. */
        void configureFirstKnown(Object builder, String[][] alternatives) throws ReflectiveOperationException {
            for (String[] pair : alternatives) {
                if (settings.containsKey(pair[0])) {
                    configure(builder, pair[0], pair[1]);
                    return;
                }
            }
            System.err.println("neo4j-devserver: this Neo4j has no setting '" + alternatives[0][0] + "'; skipped");
        }

        AutoCloseable build(Object builder) throws Throwable {
            try {
                return (AutoCloseable) build.invoke(builder);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }

        URI uri(AutoCloseable neo4j, String accessor) throws ReflectiveOperationException {
            Method m = Class.forName("org.neo4j.harness.Neo4j").getMethod(accessor);
            return (URI) unwrap(() -> m.invoke(neo4j));
        }

        private interface Call {
            Object run() throws ReflectiveOperationException;
        }

        /** Rethrows what the harness itself threw (a RuntimeException) rather than the reflection wrapper. */
        private static Object unwrap(Call call) throws ReflectiveOperationException {
            try {
                return call.run();
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof RuntimeException r) {
                    throw r;
                }
                if (e.getCause() instanceof Error err) {
                    throw err;
                }
                throw e;
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
