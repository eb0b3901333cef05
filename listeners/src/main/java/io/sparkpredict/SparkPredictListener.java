package io.sparkpredict;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.SparkConf;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.JobFailed;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerApplicationStart;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.storage.RDDInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Records one Spark application into a sparkpredict store (runs, executors, stages, tasks).
 *
 * <p>Attach with {@code spark.extraListeners=io.sparkpredict.SparkPredictListener}. Settings:
 * {@code spark.sparkpredict.store} (any Hadoop path; default: {@link #defaultStore()}, the
 * store Python reads by default), {@code .job} (default: the app name),
 * {@code .tasks} (record task rows, default true), {@code .inputBytes} (declared input size),
 * {@code .flushEveryStages} (also flush after N completed stages, default 0 = only at job ends),
 * {@code .flushEveryTasks} (also flush once this many task rows wait, default 50,000),
 * {@code .flushIntervalMs} (flushes closer together than this are merged, default 5000),
 * {@code .stopTimeoutMs} (how long the application's end waits for the last write, default 60000).
 *
 * <p>Never throws into Spark: every callback catches Throwable, logs once, and disables the
 * listener. Callbacks only build rows; {@link Flusher} writes them on a thread of its own, so a
 * slow or hung store never stalls Spark's listener bus. A store that cannot be written keeps
 * the rows and retries them with the next flush, holding at most 4 x flushEveryTasks task rows.
 */
public class SparkPredictListener extends SparkListener {
    private static final Logger LOG = LoggerFactory.getLogger(SparkPredictListener.class);
    private static final String P = "spark.sparkpredict.";
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * A task row costs 350-650 bytes of driver heap until written (measured: 346 bytes for tiny
     * tasks whose metrics are mostly small cached boxes; every metric boxed: about 650), so a
     * 1,000,000-task job held until its end took 0.35-0.65 GB. Rows are written every this many.
     */
    private static final int DEFAULT_FLUSH_EVERY_TASKS = 50_000;
    /** Task rows held at most (waiting or kept after failed writes), in multiples of flushEveryTasks. */
    private static final int HELD_CHUNKS = 4;

    private static volatile String lastError;
    private static volatile boolean termSignalled;
    private static boolean signalInstalled;

    /** The last error this JVM's listeners logged, or null (used by Python to explain gaps). */
    public static String lastError() { return lastError; }

    private static volatile SparkPredictListener current;

    /**
     * Per-stage entries the JVM's latest listener holds: stage attempts running, and the stages
     * of running jobs. Bounded by what runs now, however many stages the driver ran before.
     */
    public static int trackedStages() {
        SparkPredictListener l = current;
        if (l == null) return 0;
        synchronized (l) {
            return l.stageAggs.size() + l.stageToJob.size();
        }
    }

    /**
     * Rows of {@code table} ("runs", "tasks", "host_samples", ...) that the JVM's latest listener
     * holds for its writer: handed over and not yet written, or kept after a failed write.
     */
    public static int heldRows(String table) {
        SparkPredictListener l = current;
        Flusher f = l == null ? null : l.flusher;
        Tables.Table t = Tables.BY_NAME.get(table);
        return f == null || t == null ? 0 : f.heldRows(t);
    }

    private static final java.util.concurrent.atomic.AtomicLong BUSY_NS = new java.util.concurrent.atomic.AtomicLong();

    /** Wall time this JVM's listeners spent inside their callbacks on Spark's listener thread (ns);
     * writes happen on the writer thread ({@link #writeNanos()}), except for the wait for the last one. */
    public static long busyNanos() { return BUSY_NS.get(); }

    /** Wall time this JVM's listeners' writer threads spent writing batches (ns). */
    public static long writeNanos() { return Flusher.writeNanos(); }

    private final SparkConf conf;
    private final String jobKey;
    private final boolean recordTasks;
    private final int flushEveryStages;
    private final int flushEveryTasks;
    private final long stopTimeoutMs;
    /** This application runs the host plugin (spark.plugins names it): take its last reading at the end. */
    private final boolean hostPlugin;
    private final String writerVersion;
    private final String builtForSpark;
    private final String sparkVersion;
    private volatile Flusher flusher;
    private volatile boolean disabled;
    /** Spark posted the application's start: its SparkContext came up, there is a run to record. */
    private volatile boolean started;
    private boolean finished;
    private long droppedTaskRows;
    private Thread shutdownHook;

    // run identity and state
    private String appId;
    private String attemptId;
    private String appName;
    private long startMs;
    private Long endMs;
    private long lastUpdatedMs;
    private boolean lastJobFailed;
    private String errorMessage;
    private int numJobs;
    private int numStages;
    private long numTasks;
    private long numFailedTasks;
    private long shuffleRead;
    private long shuffleWrite;
    private long runTime;
    private long measuredInput;
    private int stagesSinceFlush;

    private static final class Exec {
        String id, host, reason;
        int cores;
        long added;
        Long removed;
        boolean written;
    }

    private static final class StageAgg {
        final long[] lsum = new long[Tables.N_METRICS];
        final double[] dsum = new double[Tables.N_METRICS];
        long[] durations = new long[16];
        int n;
        int failed;
    }

    private final Map<String, Exec> executors = new LinkedHashMap<>();
    // Per-stage state lives while its stage or job runs: a driver that runs for weeks (a Thrift
    // server, a streaming query, a notebook) must not keep ~130 bytes for every stage it ran.
    /** Stage attempts submitted and not completed; a task end of any other attempt is not summed. */
    private final Map<Long, StageAgg> stageAggs = new HashMap<>();
    /** Running jobs' stage ids, to drop their stageToJob entries when they end. */
    private final Map<Integer, int[]> runningJobStages = new HashMap<>();
    /** Persisted RDDs a succeeded stage has computed: later stages over them read the cache. */
    private final Set<Integer> materialisedRdds = new HashSet<>();
    private final Map<Integer, Integer> stageToJob = new HashMap<>();
    // rows not yet handed to the flusher; each snapshot takes the lists and starts new ones
    private List<Object[]> pendingStages = new ArrayList<>();
    private List<Object[]> pendingTasks = new ArrayList<>();
    /** spark.sparkpredict.inputBytes as bytes; null when not given, or not a size (logged). */
    private final Long declaredInputBytes;

    public SparkPredictListener(SparkConf conf) {
        // one listener per application: an error of an earlier application in this JVM is not this one's
        lastError = null;
        SparkPredictListener previous = current;
        current = this;
        this.conf = conf;
        Properties build = new Properties();
        try (InputStream in = SparkPredictListener.class.getResourceAsStream("build.properties")) {
            if (in != null) build.load(in);
        } catch (IOException | RuntimeException e) {
            // the stamp is informative only
        }
        writerVersion = build.getProperty("sparkpredict_version", "unknown");
        builtForSpark = build.getProperty("spark_version", "unknown");
        sparkVersion = runtimeSparkVersion();
        String key = null;
        boolean tasks = true;
        int every = 0;
        int everyTasks = DEFAULT_FLUSH_EVERY_TASKS;
        long stopTimeout = 60_000;
        boolean plugin = false;
        Long declared = null;
        try {
            // Its SparkContext failed to start (one SparkContext at a time: this one's is
            // starting): its shutdown hook would keep it for the JVM's life.
            if (previous != null && !previous.started) previous.removeShutdownHook();
            plugin = java.util.Arrays.asList(conf.get("spark.plugins", "").trim().split("\\s*,\\s*"))
                .contains(HostMetricsPlugin.class.getName());
            key = conf.get(P + "job", null);
            tasks = conf.getBoolean(P + "tasks", true);
            String size = conf.get(P + "inputBytes", "");
            if (!size.trim().isEmpty()) {
                declared = declaredSize(size);
                if (declared == null) {
                    // a declared size is a hint: a bad one must not cost the run's recording
                    LOG.error("sparkpredict: {}inputBytes={} is not a size (write e.g. 120g, 1.5t, or a number of "
                        + "bytes); the run's measured input is recorded instead", P, size);
                }
            }
            every = conf.getInt(P + "flushEveryStages", 0);
            everyTasks = Math.max(1, conf.getInt(P + "flushEveryTasks", DEFAULT_FLUSH_EVERY_TASKS));
            long interval = Math.max(0L, conf.getLong(P + "flushIntervalMs", 5_000L));
            stopTimeout = Math.max(0L, conf.getLong(P + "stopTimeoutMs", 60_000L));
            appName = conf.get("spark.app.name", null);
            appId = conf.get("spark.app.id", null);
            startMs = conf.getLong("spark.app.startTime", System.currentTimeMillis());
            if (!sameMinor(builtForSpark, sparkVersion)) {
                fail("sparkpredict listener jar was built for Spark " + builtForSpark + " but runs on Spark "
                    + sparkVersion + "; nothing is recorded. Fix: rebuild it against this Spark "
                    + "(sparkpredict listener build --force, in the Python environment of this Spark)", null);
            } else {
                String store = conf.get(P + "store", null);
                if (store == null || store.isEmpty()) {
                    store = defaultStore();
                }
                // Never touch SparkContext here: the listener is built inside its constructor.
                StoreWriter writer = new StoreWriter(store,
                    org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(conf), writerVersion);
                try {
                    writer.checkFileSystem();
                } catch (org.apache.hadoop.fs.UnsupportedFileSystemException e) {
                    writer = null;
                    fail(StoreWriter.noFileSystemMessage(store, e), null);
                }
                if (writer != null) {
                    flusher = new Flusher(writer, interval, everyTasks, everyTasks, new Flusher.Owner() {
                        @Override
                        public void writeFailed(String message) { setError(message); }

                        @Override
                        public void stop(String message) { fail(message, null); }
                    });
                    installHooks();
                    LOG.info("sparkpredict listener {} recording into {}", writerVersion, store);
                }
            }
        } catch (Throwable t) {
            fail("constructor", t);
        }
        jobKey = key;
        declaredInputBytes = declared;
        recordTasks = tasks;
        flushEveryStages = every;
        flushEveryTasks = everyTasks;
        stopTimeoutMs = stopTimeout;
        hostPlugin = plugin;
    }

    private static final Pattern SIZE = Pattern.compile(
        "\\s*([0-9]*\\.?[0-9]+)\\s*([kmgtp]?)(?:i?b)?\\s*", Pattern.CASE_INSENSITIVE);

    /**
     * A declared input size in bytes, or null when {@code text} is not one. The grammar and
     * rounding are those of Python's sparkpredict.units.spark_size, which reads the same
     * property from event logs: Spark's suffixes (k, m, g, t, p, with an optional b or ib,
     * binary), a bare number of bytes, and fractions ({@code 1.5g}), which Spark's own byte
     * strings refuse but a declared size is naturally written with. One string, one size,
     * whether the listener or the event-log ingest records the run.
     */
    public static Long declaredSize(String text) {
        if (text == null) return null;
        Matcher m = SIZE.matcher(text);
        if (!m.matches()) return null;
        String unit = m.group(2).toLowerCase(java.util.Locale.ROOT);
        double scale = Math.pow(1024, unit.isEmpty() ? 0 : " kmgtp".indexOf(unit.charAt(0)));
        double bytes = Math.rint(Double.parseDouble(m.group(1)) * scale);  // half to even, as Python's round
        return bytes < 0x1p63 ? Long.valueOf((long) bytes) : null;
    }

    /**
     * The embedded default store, by Python's rule (sparkpredict.config.default_store and
     * resolve_store): $SPARKPREDICT_STORE when set and not empty, else ~/.sparkpredict/store.
     */
    public static String defaultStore() {
        return defaultStore(System.getenv("SPARKPREDICT_STORE"), System.getProperty("user.home"),
            System.getProperty("user.dir"));
    }

    /**
     * {@link #defaultStore()} for the given environment value, home and working folder. A URI
     * (scheme://..., file:...) is used as it is; a local path gets a leading ~ expanded, is made
     * absolute, and becomes a file: URI, so that a cluster's fs.defaultFS (HDFS) never claims
     * it: Python reads the store from that local folder.
     */
    public static String defaultStore(String env, String home, String cwd) {
        String s = env != null && !env.isEmpty() ? env : home + "/.sparkpredict/store";
        if (s.contains("://") || s.regionMatches(true, 0, "file:", 0, 5)) return s;
        if (s.equals("~")) s = home;
        else if (s.startsWith("~/")) s = home + s.substring(1);
        java.nio.file.Path p = java.nio.file.Paths.get(s);
        if (!p.isAbsolute()) p = java.nio.file.Paths.get(cwd).resolve(p);
        return "file:" + p.normalize();
    }

    // ---- callbacks: each guarded, none may throw into Spark -------------------------------

    @Override
    public void onApplicationStart(SparkListenerApplicationStart e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                appName = e.appName();
                if (e.appId().isDefined()) appId = e.appId().get();
                attemptId = e.appAttemptId().isDefined() ? e.appAttemptId().get() : null;
                startMs = e.time();
                started = true;
            }
        } catch (Throwable t) {
            fail("onApplicationStart", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onExecutorAdded(SparkListenerExecutorAdded e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                Exec x = new Exec();
                x.id = e.executorId();
                x.host = e.executorInfo().executorHost();
                x.cores = e.executorInfo().totalCores();
                x.added = e.time();
                executors.put(x.id, x);
            }
        } catch (Throwable t) {
            fail("onExecutorAdded", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                Exec x = executors.get(e.executorId());
                if (x != null && x.removed == null) {
                    x.removed = e.time();
                    x.reason = e.reason();
                }
            }
        } catch (Throwable t) {
            fail("onExecutorRemoved", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onJobStart(SparkListenerJobStart e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                numJobs++;
                List<Object> ids = new ArrayList<>(CollectionConverters.asJava(e.stageIds()));
                int[] stages = new int[ids.size()];
                for (int i = 0; i < stages.length; i++) {
                    stages[i] = (Integer) ids.get(i);
                    stageToJob.putIfAbsent(stages[i], e.jobId());
                }
                runningJobStages.put(e.jobId(), stages);
            }
        } catch (Throwable t) {
            fail("onJobStart", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                taskEnd(e);
                if (hostPlugin) flushIfHostSamplesPileUp();
            }
        } catch (Throwable t) {
            fail("onTaskEnd", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onExecutorMetricsUpdate(SparkListenerExecutorMetricsUpdate e) {
        if (disabled || !hostPlugin) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                flushIfHostSamplesPileUp();
            }
        } catch (Throwable t) {
            fail("onExecutorMetricsUpdate", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                StageInfo s = e.stageInfo();
                stageAggs.putIfAbsent(key(s.stageId(), s.attemptNumber()), new StageAgg());
            }
        } catch (Throwable t) {
            fail("onStageSubmitted", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onStageCompleted(SparkListenerStageCompleted e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                stageCompleted(e.stageInfo());
                if (flushEveryStages > 0 && ++stagesSinceFlush >= flushEveryStages) {
                    snapshot(false);
                }
            }
        } catch (Throwable t) {
            fail("onStageCompleted", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onJobEnd(SparkListenerJobEnd e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                if (e.jobResult() instanceof JobFailed) {
                    lastJobFailed = true;
                    Exception ex = ((JobFailed) e.jobResult()).exception();
                    errorMessage = ex == null ? "job " + e.jobId() + " failed" : String.valueOf(ex.getMessage());
                } else {
                    lastJobFailed = false;
                }
                jobEnded(e.jobId());
                snapshot(false);
            }
        } catch (Throwable t) {
            fail("onJobEnd", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd e) {
        if (disabled) return;
        long t0 = System.nanoTime();
        try {
            synchronized (this) {
                if (finished) return;  // the shutdown hook recorded the run as killed
                endMs = e.time();
                int exit = e.exitCode().isDefined() ? (Integer) e.exitCode().get() : 0;
                String status;
                if (termSignalled) {
                    status = "killed";
                    if (errorMessage == null) errorMessage = "driver received SIGTERM";
                } else if (exit != 0) {
                    status = "failed";
                    if (errorMessage == null) errorMessage = "application exit code " + exit;
                } else if (lastJobFailed) {
                    status = "failed";
                } else {
                    status = "succeeded";
                    errorMessage = null;
                }
                if (hostPlugin) HostMetricsPlugin.sampleDriverNow();
                finish(status);
            }
            // Outside the lock: the writer needs none, and the shutdown hook may be waiting on it.
            // SparkContext.stop() waits for this callback, so that the last batch is in the
            // store when stop() returns, but never longer than stopTimeoutMs on a hung store.
            awaitLastWrite();
            removeShutdownHook();
        } catch (Throwable t) {
            fail("onApplicationEnd", t);
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    // ---- recording ------------------------------------------------------------------------

    private static long key(int stage, int attempt) { return ((long) stage << 32) | (attempt & 0xffffffffL); }

    private void taskEnd(SparkListenerTaskEnd e) {
        TaskInfo info = e.taskInfo();
        TaskMetrics m = e.taskMetrics();
        long key = key(e.stageId(), e.stageAttemptId());
        // Spark posts a stage's submission before any of its tasks start: no agg, no running attempt
        StageAgg agg = stageAggs.get(key);
        if (org.apache.spark.Resubmitted$.MODULE$.equals(e.reason())) {
            // A shuffle map task whose output was lost with its executor: Spark posts a second
            // end for the attempt that already ended (same TaskInfo, still SUCCESS, no metrics).
            // The attempt has its row; like Spark's UI (AppStatusListener) the stage and the run
            // count this end as a failed task. The event-log reader does the same.
            numFailedTasks++;
            if (agg != null) agg.failed++;
            return;
        }
        Object[] metrics = metricValues(m);
        long duration = info.finishTime() > 0 ? info.finishTime() - info.launchTime() : 0L;
        boolean ok = info.successful();
        numTasks++;
        if (!ok) numFailedTasks++;
        if (m != null) {
            shuffleRead += m.shuffleReadMetrics().totalBytesRead();
            shuffleWrite += m.shuffleWriteMetrics().bytesWritten();
            runTime += m.executorRunTime();
        }
        if (agg != null) {
            for (int i = 0; i < Tables.N_METRICS; i++) {
                Object v = metrics[i];
                if (v instanceof Long) agg.lsum[i] += (Long) v;
                else if (v instanceof Double) agg.dsum[i] += (Double) v;
            }
            if (agg.n == agg.durations.length) agg.durations = Arrays.copyOf(agg.durations, agg.n * 2);
            agg.durations[agg.n++] = duration;
            if (!ok) agg.failed++;
        }
        if (!recordTasks || flusher == null) return;
        // The store keeps failing (or is slower than the tasks): rows held in memory are capped.
        long held = pendingTasks.size() + flusher.heldTaskRows();
        if (held >= (long) HELD_CHUNKS * flushEveryTasks) {
            if (droppedTaskRows++ == 0) {
                String msg = "sparkpredict: " + held + " task rows wait for the store " + "(not writable, or slower "
                    + "than the tasks); further task rows are dropped (stage and run rows are kept)";
                LOG.warn(msg);
                setError(msg);
            }
            return;
        }
        Tables.Table t = Tables.TASKS;
        Object[] r = t.newRow();
        r[t.col("stage_id")] = e.stageId();
        r[t.col("stage_attempt_id")] = e.stageAttemptId();
        r[t.col("task_id")] = info.taskId();
        r[t.col("task_index")] = info.index();
        r[t.col("attempt")] = info.attemptNumber();
        r[t.col("executor_id")] = info.executorId();
        r[t.col("host")] = info.host();
        r[t.col("launch_ms")] = info.launchTime();
        r[t.col("finish_ms")] = info.finishTime();
        r[t.col("duration_ms")] = duration;
        r[t.col("getting_result_ms")] = info.gettingResultTime() > 0 && info.finishTime() > 0
            ? info.finishTime() - info.gettingResultTime() : 0L;
        r[t.col("status")] = info.status();
        r[t.col("locality")] = String.valueOf(info.taskLocality());
        r[t.col("speculative")] = info.speculative();
        int first = t.col(Tables.METRICS[0][0].toString());
        System.arraycopy(metrics, 0, r, first, Tables.N_METRICS);
        pendingTasks.add(r);
        if (pendingTasks.size() >= flushEveryTasks) snapshot(false);
    }

    /**
     * Host samples arrive all the time, not only with tasks: a two-hour job on 200 executors
     * sends 1.4 million, which waited for its end. Flush early once flushEveryTasks of them
     * wait; checked at task ends and at executors' heartbeats (every 10 s, also during long tasks).
     */
    private void flushIfHostSamplesPileUp() {
        if (HostMetricsPlugin.pendingSamples() >= flushEveryTasks) snapshot(false);
    }

    /**
     * Forget the job's stages once no running job has them (a stage keeps the first job that
     * had it, as the event-log reader assigns it).
     */
    private void jobEnded(int jobId) {
        int[] stages = runningJobStages.remove(jobId);
        if (stages == null) return;
        for (int s : stages) {
            boolean shared = false;
            for (int[] other : runningJobStages.values()) {
                for (int t : other) shared |= t == s;
            }
            if (!shared) stageToJob.remove(s);
        }
    }

    /** Metric values in schema order (Long or Double, ns converted to ms); nulls without metrics. */
    private static Object[] metricValues(TaskMetrics m) {
        Object[] v = new Object[Tables.N_METRICS];
        if (m == null) return v;
        int i = 0;
        v[i++] = m.executorRunTime();
        v[i++] = m.executorCpuTime() / 1e6;
        v[i++] = m.executorDeserializeTime();
        v[i++] = m.executorDeserializeCpuTime() / 1e6;
        v[i++] = m.jvmGCTime();
        v[i++] = m.resultSerializationTime();
        v[i++] = m.resultSize();
        v[i++] = m.inputMetrics().bytesRead();
        v[i++] = m.inputMetrics().recordsRead();
        v[i++] = m.outputMetrics().bytesWritten();
        v[i++] = m.outputMetrics().recordsWritten();
        v[i++] = m.shuffleReadMetrics().remoteBytesRead();
        v[i++] = m.shuffleReadMetrics().localBytesRead();
        v[i++] = m.shuffleReadMetrics().totalBytesRead();
        v[i++] = m.shuffleReadMetrics().fetchWaitTime();
        v[i++] = m.shuffleReadMetrics().recordsRead();
        v[i++] = m.shuffleWriteMetrics().bytesWritten();
        v[i++] = m.shuffleWriteMetrics().writeTime() / 1e6;
        v[i++] = m.shuffleWriteMetrics().recordsWritten();
        v[i++] = m.memoryBytesSpilled();
        v[i++] = m.diskBytesSpilled();
        v[i++] = m.peakExecutionMemory();
        return v;
    }

    private void stageCompleted(StageInfo s) throws IOException {
        long key = key(s.stageId(), s.attemptNumber());
        StageAgg agg = stageAggs.remove(key);
        if (agg == null) agg = new StageAgg();
        numStages++;
        Tables.Table t = Tables.STAGES;
        Object[] r = t.newRow();
        r[t.col("job_id")] = stageToJob.get(s.stageId());
        r[t.col("stage_id")] = s.stageId();
        r[t.col("stage_attempt_id")] = s.attemptNumber();
        r[t.col("name")] = s.name();
        r[t.col("num_tasks")] = s.numTasks();
        List<Object> parents = new ArrayList<>(CollectionConverters.asJava(s.parentIds()));
        r[t.col("parent_stage_ids_json")] = JSON.writeValueAsString(parents);
        List<String> rdds = new ArrayList<>();
        List<Integer> persisted = new ArrayList<>();
        boolean readsCache = false;
        for (RDDInfo ri : CollectionConverters.asJava(s.rddInfos())) {
            rdds.add(ri.name());
            if (ri.storageLevel().isValid()) {
                persisted.add(ri.id());
                readsCache |= materialisedRdds.contains(ri.id());
            }
        }
        r[t.col("rdd_names_json")] = JSON.writeValueAsString(rdds);
        Long sub = s.submissionTime().isDefined() ? (Long) s.submissionTime().get() : null;
        Long comp = s.completionTime().isDefined() ? (Long) s.completionTime().get() : null;
        r[t.col("submission_ms")] = sub;
        r[t.col("completion_ms")] = comp;
        r[t.col("duration_ms")] = sub != null && comp != null ? comp - sub : null;
        boolean failed = s.failureReason().isDefined();
        r[t.col("status")] = failed ? "failed" : "succeeded";
        r[t.col("failure_reason")] = failed ? s.failureReason().get() : null;
        r[t.col("num_task_rows")] = agg.n;
        r[t.col("num_failed_tasks")] = agg.failed;
        int first = t.col(Tables.METRICS[0][0].toString());
        for (int i = 0; i < Tables.N_METRICS; i++) {
            r[first + i] = Tables.METRICS[i][1] == Tables.Kind.DOUBLE ? (Object) agg.dsum[i] : (Object) agg.lsum[i];
        }
        if (agg.n > 0) {
            long[] d = Arrays.copyOf(agg.durations, agg.n);
            Arrays.sort(d);
            r[t.col("task_duration_min_ms")] = (double) d[0];
            r[t.col("task_duration_median_ms")] = quantile(d, 0.5);
            r[t.col("task_duration_p90_ms")] = quantile(d, 0.9);
            r[t.col("task_duration_max_ms")] = (double) d[d.length - 1];
        }
        // The run's input is what its stages read from data sources. Spark also counts a read of
        // a cached block as input, so a stage over an already computed persisted RDD is left
        // out (an iterative job would otherwise count its input once per pass). Stages with
        // parents count too: a scan can wait on other stages (Databricks' pruning, unions).
        if (!failed) {
            if (!readsCache) measuredInput += agg.lsum[t.col("input_bytes") - first];
            materialisedRdds.addAll(persisted);
        }
        pendingStages.add(r);
    }

    /** Linear interpolation between closest ranks, as numpy.quantile's default. */
    static double quantile(long[] sorted, double q) {
        double pos = q * (sorted.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = (int) Math.ceil(pos);
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
    }

    // ---- flushing -------------------------------------------------------------------------

    /** Hand over the last batch (the caller then waits for it, outside the lock). */
    private void finish(String status) {
        if (finished) return;
        statusFinal = status;
        snapshot(true);
        finished = true;
    }

    private String statusFinal;

    /** Wait, bounded, for the writer to store the last batch; say so when it could not. */
    private void awaitLastWrite() throws InterruptedException {
        Flusher f = flusher;
        if (f == null) return;
        String err = f.awaitLast(stopTimeoutMs);
        if (err != null) {
            String msg = err.startsWith("sparkpredict") ? err : "sparkpredict: " + err;
            setError(msg);
            LOG.error(msg);
        }
    }

    /**
     * Hand everything new since the last snapshot, with an updated run row, to the writer.
     * O(executors) plus the move of the pending lists: cheap enough for Spark's listener
     * thread, which never waits for the store here.
     */
    private void snapshot(boolean last) {
        if (disabled || flusher == null) return;
        stagesSinceFlush = 0;
        String runId = runId();
        long now = Math.max(System.currentTimeMillis(), lastUpdatedMs + 1);
        lastUpdatedMs = now;
        List<Object[]> execRows = new ArrayList<>();
        // Executor rows are handed over once, when final (removed, or alive at the end), so the
        // table never holds two rows for one executor; a failed write keeps them for the next.
        for (Exec x : executors.values()) {
            if (x.written || (x.removed == null && !last)) continue;
            Tables.Table t = Tables.EXECUTORS;
            Object[] r = t.newRow();
            r[t.col("executor_id")] = x.id;
            r[t.col("host")] = x.host;
            r[t.col("cores")] = x.cores;
            r[t.col("memory_mb")] = executorMemoryMb();
            r[t.col("added_ms")] = x.added;
            r[t.col("removed_ms")] = x.removed;
            r[t.col("removed_reason")] = x.reason;
            execRows.add(r);
            x.written = true;
        }
        Map<Tables.Table, List<Object[]>> batch = new HashMap<>();
        batch.put(Tables.EXECUTORS, execRows);
        batch.put(Tables.STAGES, pendingStages);
        batch.put(Tables.TASKS, pendingTasks);
        batch.put(Tables.HOST_SAMPLES, hostRows(startMs));
        List<Object[]> runs = new ArrayList<>();
        runs.add(runRow(runId, last ? statusFinal : "running", now, last));
        batch.put(Tables.RUNS, runs);
        for (List<Object[]> rows : batch.values()) {
            for (Object[] r : rows) r[0] = runId;
        }
        pendingStages = new ArrayList<>();
        pendingTasks = new ArrayList<>();
        flusher.submit(new Flusher.Batch(batch, last));
    }

    private String runId() {
        String id = appId != null ? appId : "unknown-app-" + startMs;
        return attemptId != null ? id + "/" + attemptId : id;
    }

    private Object[] runRow(String runId, String status, long now, boolean last) throws RuntimeException {
        Tables.Table t = Tables.RUNS;
        Object[] r = t.newRow();
        String master = conf.get("spark.master", null);
        r[t.col("app_id")] = appId;
        r[t.col("app_attempt_id")] = attemptId;
        r[t.col("app_name")] = appName;
        r[t.col("job")] = jobKey != null && !jobKey.isEmpty() ? jobKey : appName;
        r[t.col("status")] = status;
        r[t.col("error_message")] = "succeeded".equals(status) ? null : errorMessage;
        r[t.col("spark_version")] = sparkVersion;
        r[t.col("master")] = master;
        r[t.col("start_ms")] = startMs;
        long end = last && endMs != null ? endMs : now;
        r[t.col("end_ms")] = last ? endMs : null;
        r[t.col("wall_ms")] = end - startMs;
        r[t.col("executors_requested")] = executorsRequested(master);
        // executor timeline over [start, end]
        int max = 0;
        double aliveMs = 0;
        List<long[]> events = new ArrayList<>();
        int maxCores = 0;
        for (Exec x : executors.values()) {
            long a = Math.max(x.added, startMs);
            long b = Math.min(x.removed != null ? x.removed : end, end);
            if (b > a) aliveMs += b - a;
            events.add(new long[] {x.added, 1});
            if (x.removed != null) events.add(new long[] {x.removed, -1});
            maxCores = Math.max(maxCores, x.cores);
        }
        events.sort((p, q) -> p[0] != q[0] ? Long.compare(p[0], q[0]) : Long.compare(p[1], q[1]));
        int alive = 0;
        for (long[] ev : events) {
            alive += (int) ev[1];
            max = Math.max(max, alive);
        }
        r[t.col("executors_max")] = max;
        r[t.col("executors_mean")] = end > startMs ? aliveMs / (end - startMs) : (double) max;
        Integer cores = conf.contains("spark.executor.cores") && !isLocal(master)
            ? Integer.valueOf(conf.getInt("spark.executor.cores", 1)) : (maxCores > 0 ? Integer.valueOf(maxCores) : null);
        r[t.col("executor_cores")] = cores;
        r[t.col("executor_memory_mb")] = executorMemoryMb();
        int taskCpus = Math.max(1, conf.getInt("spark.task.cpus", 1));
        r[t.col("task_slots")] = cores != null ? max * cores / taskCpus : null;
        if (declaredInputBytes != null) {
            r[t.col("input_bytes")] = declaredInputBytes;
            r[t.col("input_bytes_source")] = "declared";
        } else {
            r[t.col("input_bytes")] = measuredInput;
            r[t.col("input_bytes_source")] = "measured";
        }
        r[t.col("shuffle_read_bytes")] = shuffleRead;
        r[t.col("shuffle_write_bytes")] = shuffleWrite;
        r[t.col("executor_run_time_ms")] = runTime;
        r[t.col("num_jobs")] = numJobs;
        r[t.col("num_stages")] = numStages;
        r[t.col("num_tasks")] = numTasks;
        r[t.col("num_failed_tasks")] = numFailedTasks;
        r[t.col("properties_json")] = propertiesJson();
        r[t.col("source")] = "listener";
        r[t.col("sparkpredict_version")] = writerVersion;
        r[t.col("schema_version")] = Tables.SCHEMA_VERSION;
        r[t.col("updated_ms")] = now;
        return r;
    }

    /** Host samples queued by {@link HostMetricsPlugin} since the last flush (none without the plugin). */
    private static List<Object[]> hostRows(long sinceMs) {
        List<Object[]> out = new ArrayList<>();
        Tables.Table t = Tables.HOST_SAMPLES;
        int[] at = new int[HostSampler.FIELDS.length];  // by name: the two lists may order differently
        for (int i = 0; i < at.length; i++) at[i] = t.col(HostSampler.FIELDS[i]);
        for (HostSampler.Sample s : HostMetricsPlugin.drain()) {
            if (s.timeMs < sinceMs) continue;  // a previous application's, in the same JVM
            Object[] r = t.newRow();
            r[t.col("executor_id")] = s.executorId;
            r[t.col("host")] = s.host;
            r[t.col("time_ms")] = s.timeMs;
            for (int i = 0; i < s.values.length; i++) {
                Long v = s.values[i];
                r[at[i]] = (v != null && t.kinds[at[i]] == Tables.Kind.INT) ? (Object) v.intValue() : v;
            }
            out.add(r);
        }
        return out;
    }

    private static boolean isLocal(String master) {
        return master != null && master.startsWith("local") && !master.startsWith("local-cluster");
    }

    private long executorMemoryMb() {
        String master = conf.get("spark.master", "");
        // In local mode the only executor is the driver, sized by spark.driver.memory.
        String key = isLocal(master) ? "spark.driver.memory" : "spark.executor.memory";
        return conf.getSizeAsMb(key, "1g");
    }

    private static final Pattern LOCAL_CLUSTER = Pattern.compile("local-cluster\\[\\s*(\\d+)\\s*,.*");

    private Integer executorsRequested(String master) {
        if (conf.contains("spark.executor.instances")) return conf.getInt("spark.executor.instances", 0);
        if (master == null) return null;
        Matcher mm = LOCAL_CLUSTER.matcher(master);
        if (mm.matches()) return Integer.parseInt(mm.group(1));
        if (isLocal(master)) return 1;
        return null;
    }

    private String propertiesJson() {
        Pattern redact = Pattern.compile(conf.get("spark.redaction.regex", "(?i)secret|password|token|access[.]?key"));
        Map<String, String> props = new TreeMap<>();
        for (scala.Tuple2<String, String> kv : conf.getAll()) {
            if (!kv._1().startsWith("spark.")) continue;
            boolean secret = redact.matcher(kv._1()).find() || redact.matcher(kv._2()).find();
            props.put(kv._1(), secret ? "*********(redacted)" : kv._2());
        }
        try {
            return JSON.writeValueAsString(props);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- failure handling, hooks and version checks ---------------------------------------

    private void fail(String where, Throwable t) {
        boolean first = !disabled;
        disabled = true;
        String msg = t == null ? where
            : "sparkpredict listener failed in " + where + " and stopped recording this application: " + t;
        setError(msg);
        if (first) {
            if (t == null) LOG.error(msg);
            else LOG.error(msg, t);
        }
        Flusher f = flusher;
        if (f != null) f.stop();
        // The writer of an earlier application, still writing its last batch after
        // stopTimeoutMs, must not turn off the host samples of the application running now.
        if (current == this) HostMetricsPlugin.listenerStopped();
        // Called from the writer thread too: the rows it will never write are not kept.
        synchronized (this) {
            pendingStages = new ArrayList<>();
            pendingTasks = new ArrayList<>();
            notifyAll();
        }
        removeShutdownHook();
    }

    /**
     * Record {@code message} as the JVM's last listener error (what listener_error returns),
     * unless a later application's listener has taken over: its errors are the ones to tell.
     */
    private void setError(String message) {
        if (current == this) lastError = message;
    }

    private void installHooks() {
        shutdownHook = new Thread(this::onShutdown, "sparkpredict-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        installTermHandler();
    }

    private void removeShutdownHook() {
        if (shutdownHook == null) return;
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException ignored) {
            // already shutting down
        }
        shutdownHook = null;
    }

    /** JVM exit without an application end (SIGTERM, System.exit, crash of the driver's code). */
    private void onShutdown() {
        try {
            // Spark's own shutdown hook stops a live context and posts the application end
            // (Hadoop's hook manager gives it 30 s): wait for it, so that a normal exit, or
            // System.exit after the driver's code failed, is not recorded as killed. A slow
            // stop on a loaded machine takes well over 10 s.
            long start = System.currentTimeMillis();
            synchronized (this) {
                while (!finished && !disabled) {
                    long waited = System.currentTimeMillis() - start;
                    // A listener whose SparkContext failed to start hears nothing, and no context
                    // is active for it: no need to wait.
                    if (waited > 45_000 || ((waited > 2_000 || !started) && !contextActive())) break;
                    wait(200);
                }
                if (!finished && !disabled) {
                    // Its SparkContext never started: no run to record, no last batch to wait for.
                    if (!started) return;
                    if (errorMessage == null) errorMessage = "driver JVM exited without an application end";
                    finish("killed");
                }
            }
            // Whoever handed over the last batch (this hook, or the application end on Spark's
            // listener thread), the JVM must not halt before the writer stored it.
            if (!disabled) awaitLastWrite();
        } catch (Throwable t) {
            fail("shutdown hook", t);
        }
    }

    /** Whether a SparkContext is still active (its stop, which posts the application end, is pending). */
    private static boolean contextActive() {
        try {
            return org.apache.spark.SparkContext$.MODULE$.getActive().isDefined();
        } catch (Throwable t) {
            return true;
        }
    }

    /** Remember SIGTERM so that the application end it causes is recorded as killed. */
    private static synchronized void installTermHandler() {
        if (signalInstalled) return;
        signalInstalled = true;
        try {
            final sun.misc.Signal term = new sun.misc.Signal("TERM");
            final sun.misc.SignalHandler[] prev = new sun.misc.SignalHandler[1];
            prev[0] = sun.misc.Signal.handle(term, sig -> {
                termSignalled = true;
                sun.misc.SignalHandler p = prev[0];
                if (p == sun.misc.SignalHandler.SIG_DFL) System.exit(128 + 15);
                else if (p != null && p != sun.misc.SignalHandler.SIG_IGN) p.handle(sig);
            });
        } catch (Throwable t) {
            LOG.debug("sparkpredict: cannot watch SIGTERM ({}); a terminated driver is recorded at exit only", t.toString());
        }
    }

    private static String runtimeSparkVersion() {
        try {
            Class<?> pkg = Class.forName("org.apache.spark.package$");
            Object module = pkg.getField("MODULE$").get(null);
            return String.valueOf(pkg.getMethod("SPARK_VERSION").invoke(module));
        } catch (Throwable t) {
            return "unknown";
        }
    }

    static boolean sameMinor(String a, String b) {
        if ("unknown".equals(a) || "unknown".equals(b)) return true;
        String[] x = a.split("\\."), y = b.split("\\.");
        return x.length >= 2 && y.length >= 2 && x[0].equals(y[0]) && x[1].equals(y[1]);
    }
}
