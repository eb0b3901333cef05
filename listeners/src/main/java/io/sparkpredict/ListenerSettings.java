package io.sparkpredict;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listener's {@code spark.sparkpredict.*} settings (and whether spark.plugins runs the host
 * plugin), read once when Spark builds it, with the size and store rules it shares with Python.
 *
 * <p>Immutable: read by Spark's listener thread and the shutdown hook without a lock.
 */
final class ListenerSettings {
    /** The longest interval or wait a setting takes, in ms: a year. */
    static final long MAX_MS = 365L * 24 * 3600 * 1000;
    // Logged under the listener's name, which log4j settings that quiet or raise it name.
    private static final Logger LOG = LoggerFactory.getLogger(SparkPredictListener.class);
    static final String P = "spark.sparkpredict.";
    /**
     * A task row costs 350-650 bytes of driver heap until written (measured: 346 bytes for tiny
     * tasks whose metrics are mostly small cached boxes; every metric boxed: about 650), so a
     * 1,000,000-task job held until its end took 0.35-0.65 GB. Rows are written every this many.
     */
    static final int DEFAULT_FLUSH_EVERY_TASKS = 50_000;

    /** What a listener holds when its settings could not be read (it records nothing then). */
    static final ListenerSettings DEFAULTS =
        new ListenerSettings(null, true, 0, DEFAULT_FLUSH_EVERY_TASKS, 5_000L, 60_000L, false, null);

    /** spark.sparkpredict.job; null when not given (the run row's job is then the app name). */
    final String jobKey;
    final boolean recordTasks;
    final int flushEveryStages;
    final int flushEveryTasks;
    final long flushIntervalMs;
    final long stopTimeoutMs;
    /** This application runs the host plugin (spark.plugins names it): take its last reading at the end. */
    final boolean hostPlugin;
    /** spark.sparkpredict.inputBytes as bytes; null when not given, or not a size (logged). */
    final Long declaredInputBytes;

    private ListenerSettings(String jobKey, boolean recordTasks, int flushEveryStages, int flushEveryTasks,
                             long flushIntervalMs, long stopTimeoutMs, boolean hostPlugin, Long declaredInputBytes) {
        this.jobKey = jobKey;
        this.recordTasks = recordTasks;
        this.flushEveryStages = flushEveryStages;
        this.flushEveryTasks = flushEveryTasks;
        this.flushIntervalMs = flushIntervalMs;
        this.stopTimeoutMs = stopTimeoutMs;
        this.hostPlugin = hostPlugin;
        this.declaredInputBytes = declaredInputBytes;
    }

    /**
     * The settings of {@code conf}. A value that is not what its key takes is logged, naming the
     * fix, and its default used: a mistyped tuning knob must not cost the run's recording.
     */
    static ListenerSettings read(SparkConf conf) {
        boolean plugin = java.util.Arrays.asList(conf.get("spark.plugins", "").trim().split("\\s*,\\s*"))
            .contains(HostMetricsPlugin.class.getName());
        String key = conf.get(P + "job", null);
        boolean tasks = flag(conf, P + "tasks", true);
        Long declared = null;
        String size = conf.get(P + "inputBytes", "");
        if (!size.trim().isEmpty()) {
            declared = declaredSize(size);
            if (declared == null) {
                // a declared size is a hint: a bad one must not cost the run's recording
                LOG.error("sparkpredict: {}inputBytes={} is not a size (write e.g. 300GB, 1.5TiB, 120g or a "
                    + "number of bytes); the run's measured input is recorded instead", P, size);
            }
        }
        int every = count(conf, P + "flushEveryStages", 0);
        // 0 is the default, not a flush after every task: the rows held are capped at
        // HELD_CHUNKS x this, and at 1 (as 0 used to read) a batch per task dropped most rows
        int everyTasks = count(conf, P + "flushEveryTasks", DEFAULT_FLUSH_EVERY_TASKS);
        if (everyTasks == 0) everyTasks = DEFAULT_FLUSH_EVERY_TASKS;
        // At most a year: the writer shifts the interval left for its back-off after failed
        // writes, which wrapped negative for a flushIntervalMs past 2^53 (a failing store was
        // retried in a busy loop); the stop timeout gets the same bound
        long interval = Math.min(MAX_MS, Math.max(0L, millis(conf, P + "flushIntervalMs", 5_000L)));
        long stopTimeout = Math.min(MAX_MS, Math.max(0L, millis(conf, P + "stopTimeoutMs", 60_000L)));
        return new ListenerSettings(key, tasks, every, everyTasks, interval, stopTimeout, plugin, declared);
    }

    private static boolean flag(SparkConf conf, String key, boolean dflt) {
        String v = conf.get(key, "").trim();
        if (v.isEmpty()) return dflt;
        if (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false")) return Boolean.parseBoolean(v);
        badValue(key, v, "true or false", String.valueOf(dflt));
        return dflt;
    }

    private static int count(SparkConf conf, String key, int dflt) {
        String v = conf.get(key, "").trim();
        if (v.isEmpty()) return dflt;
        try {
            int n = Integer.parseInt(v);
            if (n >= 0) return n;
        } catch (NumberFormatException e) {
            // said below
        }
        badValue(key, v, "a whole number, 0 or more", String.valueOf(dflt));
        return dflt;
    }

    /** Milliseconds: a number (of ms) or a Spark duration (500ms, 5s, 2min), as Spark reads its own *Ms keys. */
    static long millis(SparkConf conf, String key, long dflt) {
        String v = conf.get(key, "").trim();
        if (v.isEmpty()) return dflt;
        try {
            long ms = org.apache.spark.network.util.JavaUtils.timeStringAsMs(v);
            if (ms >= 0) return ms;
        } catch (RuntimeException e) {
            // said below
        }
        badValue(key, v, "milliseconds, or a duration such as 500ms, 5s or 2min", dflt + "ms");
        return dflt;
    }

    private static void badValue(String key, String value, String takes, String dflt) {
        LOG.warn("sparkpredict: {}={} is not {}; {} is used instead (fix the setting, or leave it out)",
            key, value, takes, dflt);
    }

    private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]+:");
    private static final Pattern SIZE = Pattern.compile(
        "\\s*([0-9]*\\.?[0-9]+(?:e[+-]?[0-9]+)?)\\s*([a-z]*)\\s*", Pattern.CASE_INSENSITIVE);
    private static final Map<String, Long> UNITS = new HashMap<>();
    static {
        String[] prefixes = {"k", "m", "g", "t", "p"};
        long dec = 1, bin = 1;
        UNITS.put("", 1L);
        UNITS.put("b", 1L);
        for (String p : prefixes) {
            dec *= 1000;
            bin *= 1024;
            UNITS.put(p + "b", dec);
            UNITS.put(p, bin);
            UNITS.put(p + "ib", bin);
        }
    }

    /**
     * A declared input size in bytes, or null when {@code text} is not one. Read as
     * {@code --input-size} reads sizes (Python's sparkpredict.units.declared_size, which reads
     * the same property from event logs): KB..PB decimal, KiB..PiB binary, Spark's bare
     * suffixes (k, m, g, t, p) binary, a bare number bytes; any case, fractions and exponents
     * allowed, rounded half to even; zero, below one byte or 2^63 bytes and more are not sizes.
     * Not Spark's byte strings, where {@code 5mb} is 5 MiB: the same {@code 5MB} declared here,
     * to {@code submit --input-size} or to {@code suggest} is one size.
     */
    static Long declaredSize(String text) {
        if (text == null) return null;
        Matcher m = SIZE.matcher(text);
        if (!m.matches()) return null;
        Long scale = UNITS.get(m.group(2).toLowerCase(java.util.Locale.ROOT));
        if (scale == null) return null;
        double bytes = Math.rint(Double.parseDouble(m.group(1)) * scale);  // half to even, as Python's round
        return bytes >= 1 && bytes < 0x1p63 ? Long.valueOf((long) bytes) : null;
    }

    /**
     * spark.sparkpredict.store: a URI as it is (hdfs://, s3a://, file:...); a path without a
     * scheme is a local folder, as Python reads it ({@link #localStore}), never one of
     * fs.defaultFS (HDFS), which Python would not look in; when not set, {@link #defaultStore()}.
     */
    static String store(SparkConf conf) {
        return localStore(storeSetting(conf), home(), System.getProperty("user.dir"));
    }

    /** The store as set ({@code spark.sparkpredict.store}, else the default's), before {@link #localStore}. */
    private static String storeSetting(SparkConf conf) {
        String store = conf.get(P + "store", "").trim();  // a properties file's value is trimmed too
        return store.isEmpty() ? defaultSetting(System.getenv("SPARKPREDICT_STORE"), home()) : store;
    }

    private static String defaultSetting(String env, String home) {
        return env != null && !env.trim().isEmpty() ? env : home + "/.sparkpredict/store";
    }

    /**
     * Why this JVM cannot record into the store of {@code conf} ({@link #unnameableStore(String,
     * String, String, String)}, for this JVM's file-name charset), or null when it can.
     */
    static String unnameableStore(SparkConf conf) {
        return unnameableStore(storeSetting(conf), home(), System.getProperty("user.dir"),
            System.getProperty("sun.jnu.encoding"));
    }

    /**
     * Why a JVM naming files in {@code fileNames} (its sun.jnu.encoding) cannot record into the
     * local store {@code store} (a setting as {@link #localStore} reads it, for {@code home} and
     * {@code cwd}), naming the fix; null when it can, when the store is not local (hdfs://,
     * s3a://, ...) or the charset is not known.
     *
     * <p>sun.jnu.encoding follows the locale (LC_ALL, else LC_CTYPE, else LANG) and no -D option
     * changes it (file.encoding=UTF-8 does not). Under LC_ALL=C it is ASCII: Hadoop's local file
     * system wrote a store file:///data/ünï into a folder /data/?n?, where no Python reader
     * (naming files in UTF-8) looks, and a plain path failed in Paths.get with a message naming
     * no fix. The same locale turns what it cannot read into '?' before the listener sees it: a
     * {@code --conf} on spark-submit's command line arrives as /data/??n??, so under ASCII a '?'
     * in a local store's path is refused too. Python's attach() and submit refuse such a store
     * before Spark starts (check_store_nameable); this is the listener set up by hand.
     */
    static String unnameableStore(String store, String home, String cwd, String fileNames) {
        java.nio.charset.Charset names;
        try {
            names = java.nio.charset.Charset.forName(fileNames);
        } catch (RuntimeException e) {  // null, or a charset this JDK does not know: cannot tell
            return null;
        }
        String path = localPath(store, home, cwd);
        if (path == null) return null;
        String why;
        if (!names.newEncoder().canEncode(path)) {
            why = "which cannot write the folder's name: Hadoop would record into a folder named with '?' "
                + "for those characters, not the one Python reads";
        } else if (names.equals(java.nio.charset.StandardCharsets.US_ASCII) && path.indexOf('?') >= 0) {
            why = "and '?' in the folder's name is what that charset makes of characters it could not read "
                + "(a --conf on spark-submit's command line): the runs would go to another folder than the one "
                + "meant";
        } else {
            return null;
        }
        return "sparkpredict: cannot record into store " + store + ": this JVM names files in " + names.name()
            + " (its locale's charset: LC_ALL, else LC_CTYPE, else LANG), " + why + "; nothing is recorded for "
            + "this application. Fix: run Spark under a UTF-8 locale (export LC_ALL=C.UTF-8), or set "
            + P + "store to a path of ASCII characters";
    }

    /**
     * The local folder's path a store setting names (a file: URI's path as Hadoop's local file
     * system takes it, percent escapes kept; a plain path as {@link #localStore} resolves it,
     * not normalised), or null for a store of another file system.
     */
    private static String localPath(String s, String home, String cwd) {
        if (s.regionMatches(true, 0, "file:", 0, 5)) {
            try {
                return new org.apache.hadoop.fs.Path(s).toUri().getPath();
            } catch (IllegalArgumentException e) {
                return s;  // the writer says what is wrong with it
            }
        }
        if (isUri(s)) return null;
        s = expandHome(s, home);
        return s.startsWith("/") ? s : cwd + "/" + s;
    }

    private static boolean isUri(String s) {
        // hdfs:/p too (a scheme of two characters or more): a Hadoop path, as before; Python
        // refuses it, naming hdfs:///p
        return s.contains("://") || s.regionMatches(true, 0, "file:", 0, 5) || SCHEME.matcher(s).lookingAt();
    }

    /** A leading ~ or ~/ as the home folder (not ~user), as Python's resolve_store reads it. */
    private static String expandHome(String s, String home) {
        if (s.equals("~")) return home;
        return s.startsWith("~/") ? home + s.substring(1) : s;
    }

    /** $HOME when set, else the JVM's user.home: Python's expanduser and Path.home() read $HOME
     * first, and user.home comes from the password database (another folder under sudo -E, or a
     * HOME set for a run). */
    private static String home() {
        String env = System.getenv("HOME");
        return env != null && !env.isEmpty() ? env : System.getProperty("user.home");
    }

    /**
     * The embedded default store, by Python's rule (sparkpredict.config.embedded_store and
     * resolve_store): $SPARKPREDICT_STORE when set and not empty, else ~/.sparkpredict/store.
     */
    static String defaultStore() {
        return defaultStore(System.getenv("SPARKPREDICT_STORE"), home(), System.getProperty("user.dir"));
    }

    /**
     * {@link #defaultStore()} for the given environment value, home and working folder. A URI
     * (scheme://..., file:...) is used as it is; a local path gets a leading ~ expanded, is made
     * absolute, and becomes a file: URI, so that a cluster's fs.defaultFS (HDFS) never claims
     * it: Python reads the store from that local folder.
     */
    static String defaultStore(String env, String home, String cwd) {
        return localStore(defaultSetting(env, home), home, cwd);
    }

    /**
     * A store setting as Python's resolve_store reads it: a URI as it is; a local path with a
     * leading ~ or ~/ expanded (not ~user), made absolute against {@code cwd} and normalised
     * lexically (symbolic links are not followed, by either side), as a file: URI.
     */
    static String localStore(String s, String home, String cwd) {
        if (isUri(s)) return s;
        s = expandHome(s, home);
        java.nio.file.Path p = java.nio.file.Paths.get(s);
        if (!p.isAbsolute()) p = java.nio.file.Paths.get(cwd).resolve(p);
        return "file:" + p.normalize();
    }
}
