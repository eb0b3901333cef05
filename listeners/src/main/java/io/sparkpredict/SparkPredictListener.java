package io.sparkpredict;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerApplicationStart;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerResourceProfileAdded;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerUnpersistRDD;
import org.apache.spark.scheduler.TaskInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records one Spark application into a sparkpredict store (runs, executors, stages, tasks).
 *
 * <p>Attach with {@code spark.extraListeners=io.sparkpredict.SparkPredictListener}. Settings:
 * {@code spark.sparkpredict.store} (any Hadoop path; default: {@link #defaultStore()}, the
 * store Python reads by default), {@code .job} (default: the app name),
 * {@code .tasks} (record task rows, default true), {@code .inputBytes} (declared input size),
 * {@code .flushEveryStages} (also flush after N completed stages, default 0 = only at job ends),
 * {@code .flushEveryTasks} (also flush once this many task rows wait, default 50,000),
 * {@code .flushIntervalMs} (flushes closer together than this, or than a tenth of the
 * application's age up to 10 minutes, are merged; default 5000),
 * {@code .stopTimeoutMs} (how long the application's end waits for the last write, default 60000).
 *
 * <p>Never throws into Spark: every callback catches Throwable. One that fails on an event loses
 * that event, as if Spark had dropped it, and recording goes on ({@link #lost}); a failure where
 * carrying on is unsafe or pointless (the JVM's own errors, the application's start or end, the
 * writer, more than {@link #MAX_LOST_EVENTS} lost events) turns the listener off for the
 * application ({@link #fail}; in a callback, after a last batch: {@link #stopWithLastBatch}). Callbacks only build rows; {@link Flusher} writes them on a
 * thread of its own, so a slow or hung store never stalls Spark's listener bus. A store that cannot be written keeps
 * the rows and retries them with the next flush, holding at most 4 x flushEveryTasks task rows
 * and about 2 x flushEveryTasks stage rows.
 *
 * <p>This class is the part Spark and the JVM talk to: callbacks, flushes, failure and exit.
 * What it records lives in {@link RunRecord} (the run and its executors) and
 * {@link StageTracker} (the stages), read from {@link ListenerSettings}; all of that state is
 * guarded by this listener's lock, which the writer thread and the shutdown hook take too.
 */
public class SparkPredictListener extends SparkListener {
    private static final Logger LOG = LoggerFactory.getLogger(SparkPredictListener.class);
    /** Task rows held at most (waiting or kept after failed writes), in multiples of flushEveryTasks. */
    private static final int HELD_CHUNKS = 4;
    /**
     * Events the callbacks may fail on in one application before the listener turns itself off.
     * A failure met now and then (an event shape not foreseen, another library's malformed
     * event) costs the run that event only; one that recurs at every event (code that cannot
     * run here) would otherwise log, count and lose events for as long as the driver lives,
     * and a run with hundreds of its events lost has figures too far off to learn from. 100
     * leaves room for a burst of one bad event kind, which the run's note counts.
     */
    public static final int MAX_LOST_EVENTS = 100;

    // guarded by ERRORS: the listener thread and the writer thread both report errors
    private static final Object ERRORS = new Object();
    private static String lastError;
    private static String firstError;
    private static int errorCount;

    /**
     * The last error this JVM's current listener logged, or null (used by Python to explain
     * gaps). After more than one, it also counts them and gives the first: a store that failed
     * and then recovered would otherwise hide why rows are missing behind a later message.
     */
    public static String lastError() {
        synchronized (ERRORS) {
            if (errorCount <= 1 || lastError == null || lastError.equals(firstError)) return lastError;
            return lastError + " [" + errorCount + " listener errors in this application; the first: "
                + firstError + "]";
        }
    }

    private static void resetErrors() {
        synchronized (ERRORS) {
            lastError = null;
            firstError = null;
            errorCount = 0;
        }
    }

    private static volatile SparkPredictListener current;

    /**
     * The Python driver's code raised {@code why}: nothing caught it (sparkpredict.attach's exit
     * handler calls this through py4j), or it was in flight as the script stopped its context
     * (attach's wrapper of SparkContext.stop, in a finally or a with block); or a JVM
     * application's {@code main} threw ({@link MainThreadRaised}). The application
     * that ends next is recorded as {@code status}, "failed" or "killed" (KeyboardInterrupt, a
     * cancelled asyncio task), not succeeded. Its own end says
     * exit code 0 when Python launched the JVM, as when the context stops from Spark's shutdown
     * hook: without this, a script that wrote half its output and raised trained the models
     * as a complete run. Never throws into the caller.
     */
    public static void driverRaised(String status, String why) {
        SparkPredictListener l = current;
        if (l == null || why == null || !("failed".equals(status) || "killed".equals(status))) return;
        l.driverRaised = new String[] {status, why};
    }

    /**
     * Per-stage entries the JVM's latest listener holds: stage attempts running, and the stages
     * of running jobs. Bounded by what runs now, however many stages the driver ran before.
     */
    public static int trackedStages() {
        return ofCurrent(l -> l.stages.tracked());
    }

    /** SQL executions whose reads of file scans the JVM's latest listener holds: those running. */
    public static int trackedExecutions() {
        return ofCurrent(l -> l.stages.scans.executions());
    }

    /**
     * Per-executor entries the JVM's latest listener holds: executors alive or not handed to
     * the writer yet, and the executor events of about the last minute. Bounded by what runs
     * now, however many executors the application added and removed before.
     */
    public static int trackedExecutors() {
        return ofCurrent(l -> l.run.trackedExecutors());
    }

    /** Persisted RDDs the JVM's latest listener remembers as computed: those not unpersisted yet. */
    public static int trackedRdds() {
        return ofCurrent(l -> l.stages.materialised());
    }

    /** {@code count} of the JVM's latest listener, read under its lock; 0 without one. */
    private static int ofCurrent(java.util.function.ToIntFunction<SparkPredictListener> count) {
        SparkPredictListener l = current;
        if (l == null) return 0;
        synchronized (l) {
            return count.applyAsInt(l);
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

    /** {@link ListenerSettings#declaredSize}: Python's event-log ingest reads a declared size with it. */
    public static Long declaredSize(String text) { return ListenerSettings.declaredSize(text); }

    /** {@link ListenerSettings#defaultStore()}: the store used when spark.sparkpredict.store is not set. */
    public static String defaultStore() { return ListenerSettings.defaultStore(); }

    /** {@link ListenerSettings#defaultStore(String, String, String)}. */
    public static String defaultStore(String env, String home, String cwd) {
        return ListenerSettings.defaultStore(env, home, cwd);
    }

    /** A store setting as the listener reads it, for the given home and working folder (tests). */
    public static String localStore(String value, String home, String cwd) {
        return ListenerSettings.localStore(value, home, cwd);
    }

    /** {@link ListenerSettings#unnameableStore(String, String, String, String)} (tests). */
    public static String unnameableStore(String value, String home, String cwd, String fileNames) {
        return ListenerSettings.unnameableStore(value, home, cwd, fileNames);
    }

    private final ListenerSettings settings;
    private volatile Flusher flusher;
    private volatile boolean disabled;
    /** Spark posted the application's start: its SparkContext came up, there is a run to record. */
    private volatile boolean started;
    private boolean finished;
    /** The listener handed over a last batch and stopped ({@link #stopWithLastBatch}). */
    private volatile boolean stoppedWithLastBatch;
    private long droppedTaskRows;
    private Thread shutdownHook;

    private final StageTracker stages = new StageTracker();
    /** The listener bus queue that calls this listener ("shared" for spark.extraListeners), once heard from. */
    private volatile String queue;
    /** Spark's count of the events its bus dropped from that queue, once found. */
    private volatile com.codahale.metrics.Counter droppedCounter;
    private final RunRecord run;
    private long lastUpdatedMs;
    private int stagesSinceFlush;
    private String statusFinal;
    /** {status, message} of the driver's uncaught exception ({@link #driverRaised}), or null. */
    private volatile String[] driverRaised;
    // rows not yet handed to the flusher; each snapshot takes the lists and starts new ones
    private List<Object[]> pendingStages = new ArrayList<>();
    private List<Object[]> pendingTasks = new ArrayList<>();
    private List<Object[]> pendingScans = new ArrayList<>();

    public SparkPredictListener(SparkConf conf) {
        // one listener per application: an error of an earlier application in this JVM is not this one's
        resetErrors();
        SparkPredictListener previous = current;
        current = this;
        BuildStamp stamp = BuildStamp.read();
        run = new RunRecord(conf, stamp, stages);
        ListenerSettings read = ListenerSettings.DEFAULTS;
        try {
            // Its SparkContext failed to start (one SparkContext at a time: this one's is
            // starting): its shutdown hook would keep it for the JVM's life.
            if (previous != null && !previous.started) previous.removeShutdownHook();
            read = ListenerSettings.read(conf);
            run.readConf();
            String unnameable;
            if (!stamp.fitsRuntime()) {
                fail("sparkpredict listener jar was built for Spark " + stamp.builtForSpark + " but runs on Spark "
                    + stamp.sparkVersion + "; nothing is recorded. Fix: rebuild it against this Spark "
                    + "(sparkpredict listener build --force, in the Python environment of this Spark)", null);
            } else if ((unnameable = ListenerSettings.unnameableStore(conf)) != null) {
                fail(unnameable, null);  // a local store this JVM's locale cannot name (LC_ALL=C)
            } else {
                String store = ListenerSettings.store(conf);
                // Never touch SparkContext here: the listener is built inside its constructor.
                StoreWriter writer = new StoreWriter(store,
                    org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(conf), stamp.writerVersion);
                try {
                    writer.checkFileSystem();
                } catch (org.apache.hadoop.fs.UnsupportedFileSystemException e) {
                    writer = null;
                    fail(StoreWriter.noFileSystemMessage(store, e), null);
                }
                if (writer != null) {
                    flusher = new Flusher(writer, read.flushIntervalMs, read.flushEveryTasks, read.flushEveryTasks,
                        read.flushEveryTasks,
                        new Flusher.Owner() {
                            @Override
                            public void writeFailed(String message) { setError(message); }

                            @Override
                            public void stop(String message) { fail(message, null); }
                        });
                    installHooks();
                    // the store is first touched at the first flush: a store it cannot write is
                    // logged then, seconds after this line
                    LOG.info("sparkpredict listener {} recording into {} (first written at the first job's end)",
                        stamp.writerVersion, store);
                }
            }
        } catch (Throwable t) {
            fail("constructor", t);
        }
        settings = read;
    }

    // ---- callbacks: each guarded, none may throw into Spark -------------------------------

    /**
     * One callback's work, under the listener's lock. A failure never reaches Spark's listener
     * bus: the event is lost and recording goes on ({@link #lost}); the time spent counts in
     * {@link #busyNanos}. onApplicationEnd keeps its own form: part of it runs outside the lock.
     */
    private void locked(String where, Work work) {
        guarded(where, false, work);
    }

    /** {@link #locked}; {@code essential}: a failure turns the listener off ({@link #fail}) instead. */
    private void guarded(String where, boolean essential, Work work) {
        if (disabled) return;
        long t0 = System.nanoTime();
        if (queue == null) queue = queueOf(Thread.currentThread());
        try {
            synchronized (this) {
                work.run();
            }
        } catch (Throwable t) {
            if (essential) {
                fail(where, t);
            } else if (t instanceof VirtualMachineError) {
                // the JVM's own errors (out of memory, a stack overflow): nothing it records now
                // is safe to count; the run ends there, saying why, not left `running`
                stopWithLastBatch("sparkpredict listener failed in " + where
                    + " and stopped recording this application: " + t, t);
            } else {
                lost(where, t);
            }
        } finally {
            BUSY_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    /** A callback's body: may throw what the callbacks' own code throws (I/O of a flush). */
    @FunctionalInterface
    private interface Work {
        void run() throws Exception;
    }

    @Override
    public void onApplicationStart(SparkListenerApplicationStart e) {
        // essential: without it the run's identity (id, attempt, start time) is not known
        guarded("onApplicationStart", true, () -> {
            run.applicationStarted(e);
            started = true;
        });
    }

    @Override
    public void onExecutorAdded(SparkListenerExecutorAdded e) {
        locked("onExecutorAdded", () -> run.executorAdded(e));
    }

    @Override
    public void onResourceProfileAdded(SparkListenerResourceProfileAdded e) {
        locked("onResourceProfileAdded", () -> run.resourceProfileAdded(e));
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        locked("onExecutorRemoved", () -> run.executorRemoved(e));
    }

    @Override
    public void onJobStart(SparkListenerJobStart e) {
        locked("onJobStart", () -> {
            stages.jobStarted(e);  // first: the part that reads the event, and may throw on it
            run.jobStarted(e.jobId(), e.properties());
        });
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
        locked("onTaskEnd", () -> {
            taskEnd(e);
            if (settings.hostPlugin) flushIfHostSamplesPileUp();
        });
    }

    @Override
    public void onExecutorMetricsUpdate(SparkListenerExecutorMetricsUpdate e) {
        if (disabled || !settings.hostPlugin) return;  // disabled first: a failed start may leave no settings
        locked("onExecutorMetricsUpdate", this::flushIfHostSamplesPileUp);
    }

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted e) {
        locked("onStageSubmitted", () -> stages.submitted(e.stageInfo()));
    }

    @Override
    public void onUnpersistRDD(SparkListenerUnpersistRDD e) {
        locked("onUnpersistRDD", () -> stages.unpersisted(e.rddId()));
    }

    @Override
    public void onStageCompleted(SparkListenerStageCompleted e) {
        locked("onStageCompleted", () -> {
            Object[] row = stages.completed(e.stageInfo());
            if (row == null) return;  // a repeated completion of a stage attempt (barrier stages)
            pendingStages.add(row);
            if (stages.scanRow != null) pendingScans.add(stages.scanRow);
            if (settings.flushEveryStages > 0 && ++stagesSinceFlush >= settings.flushEveryStages) {
                snapshot(false);
            }
        });
    }

    /**
     * The SQL events that tell a file scan's input (ScanInput). A failure here only turns the
     * scan rule off (the tasks' input metric counts from then on), never the recording; but for
     * the JVM's own errors in an update, which stop it as in any callback.
     */
    @Override
    public void onOtherEvent(SparkListenerEvent e) {
        if (disabled || stages.scans.off) return;
        try {
            if (e instanceof org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart) {
                locked("onOtherEvent", () -> scanEvent(() -> stages.scans.plan(
                    ((org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart) e).sparkPlanInfo())));
            } else if (e instanceof org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate) {
                locked("onOtherEvent", () -> scanEvent(() -> stages.scans.plan(
                    ((org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate) e).sparkPlanInfo())));
            } else if (e instanceof org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates) {
                locked("onOtherEvent", () -> scanEvent(() -> stages.scans.driverUpdates(
                    ((org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates) e).accumUpdates())));
            } else if (e instanceof org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd) {
                locked("onOtherEvent", () -> scanEvent(() -> stages.scans.executionEnded(
                    ((org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd) e).executionId())));
            }
        } catch (Throwable t) {  // no Spark SQL classes (a core-only Spark): no scans to count
            stages.scans.turnOff(t);
        }
    }

    /** Run a ScanInput update; one that fails turns the scan rule off ({@link ScanInput#guard}). */
    private void scanEvent(Runnable update) {
        stages.scans.guard(() -> {
            update.run();
            return true;
        });
    }

    @Override
    public void onJobEnd(SparkListenerJobEnd e) {
        locked("onJobEnd", () -> {
            droppedEvents();  // found on Spark's listener thread, while its SparkEnv is this application's
            int jobId = e.jobId();
            org.apache.spark.scheduler.JobResult result = e.jobResult();  // all read before anything is counted
            run.jobEnded(jobId, result);
            stages.jobEnded(jobId);
            snapshot(false);
        });
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd e) {
        // stopped with a last batch (too many lost events, the JVM's own error): only it to wait for
        if (disabled && !stoppedWithLastBatch) return;
        long t0 = System.nanoTime();
        try {
            if (!stoppedWithLastBatch) synchronized (this) {
                if (finished) return;  // the shutdown hook recorded the run as killed
                if (queue == null) queue = queueOf(Thread.currentThread());
                String status = run.applicationEnded(e, TermSignal.received(), raised(), droppedEvents(), queue);
                if (settings.hostPlugin) HostMetricsPlugin.sampleDriverNow();
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

    /**
     * {status, message} of the driver's failure as the application ends, or null: what the
     * driver told ({@link #driverRaised}), else spark-submit exiting for its Python or R
     * application's non-zero status ({@link SubmitExit}).
     */
    private String[] raised() {
        String[] told = driverRaised;
        if (told != null) return told;
        return SubmitExit.failedApplication() ? new String[] {"failed", SubmitExit.MESSAGE} : null;
    }

    // ---- recording ------------------------------------------------------------------------

    private void taskEnd(SparkListenerTaskEnd e) {
        TaskInfo info = e.taskInfo();
        TaskMetrics m = e.taskMetrics();
        // Spark posts a stage's submission before any of its tasks start: no agg, no running attempt
        StageTracker.Agg agg = stages.running(e.stageId(), e.stageAttemptId());
        if (org.apache.spark.Resubmitted$.MODULE$.equals(e.reason())) {
            // a second end of an attempt that has its row: only a failed task to count
            run.taskResubmitted();
            if (agg != null) agg.failed++;
            return;
        }
        // Everything read from the event before anything is counted: an event this fails on
        // (a callback that throws loses its event, see lost) is then counted nowhere, and the
        // run's, the stage's and the task rows' sums stay those of the same tasks.
        Object[] metrics = TaskRows.metricValues(m);
        long duration = info.finishTime() > 0 ? info.finishTime() - info.launchTime() : 0L;
        boolean ok = info.successful();
        int partition = info.partitionId() >= 0 ? info.partitionId() : info.index();
        long bytesRead = TaskRows.longAt(metrics, TaskRows.INPUT_BYTES);
        boolean mapTask = "ShuffleMapTask".equals(e.taskType());
        Object[] row = settings.recordTasks && flusher != null ? TaskRows.row(e, metrics, duration) : null;
        run.taskEnded(ok, metrics);
        if (agg != null) {
            agg.add(metrics, duration, ok);
            // a map stage, told by its tasks as the event-log ingest tells it (a replayed
            // StageInfo has no shuffleDepId)
            agg.mapStage |= mapTask;
            // the partition, not the task's place in its attempt: a retried attempt numbers
            // only the partitions it re-runs (Spark >= 3.3 tells it)
            if (ok) agg.read(partition, bytesRead);
        }
        if (row == null) return;
        // The store keeps failing (or is slower than the tasks): rows held in memory are capped.
        long held = pendingTasks.size() + flusher.heldTaskRows();
        if (held >= (long) HELD_CHUNKS * settings.flushEveryTasks) {
            if (droppedTaskRows++ == 0) {
                String msg = "sparkpredict: " + held + " task rows wait for the store " + "(not writable, or slower "
                    + "than the tasks); further task rows are dropped (stage and run rows are kept)";
                LOG.warn(msg);
                setError(msg);
            }
            return;
        }
        pendingTasks.add(row);
        if (pendingTasks.size() >= settings.flushEveryTasks) snapshot(false);
    }

    /**
     * Host samples arrive all the time, not only with tasks: a two-hour job on 200 executors
     * sends 1.4 million, which waited for its end. Flush early once flushEveryTasks of them
     * wait; checked at task ends and at executors' heartbeats (every 10 s, also during long tasks).
     */
    private void flushIfHostSamplesPileUp() {
        if (HostMetricsPlugin.pendingSamples() >= settings.flushEveryTasks) snapshot(false);
    }

    // ---- flushing -------------------------------------------------------------------------

    /** Spark's listener bus runs each queue's listeners on a thread of this name and the queue's. */
    private static final String QUEUE_THREAD = "spark-listener-group-";

    private static String queueOf(Thread t) {
        String name = t.getName();
        return name.startsWith(QUEUE_THREAD) ? name.substring(QUEUE_THREAD.length()) : null;
    }

    /**
     * Events Spark's listener bus dropped from this listener's queue since the application
     * started, which it does when the queue is full (spark.scheduler.listenerbus.eventqueue.capacity):
     * the queue's numDroppedEvents counter in the bus's metrics, kept in SparkEnv's metrics system
     * (read there, not through SparkContext, whose getActive takes the context lock: see
     * {@link #onShutdown}). 0 when it cannot tell: a Spark without that metric.
     */
    private long droppedEvents() {
        try {
            com.codahale.metrics.Counter c = droppedCounter;
            if (c == null) {
                org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
                if (env == null) return 0L;
                String name = "queue." + (queue != null ? queue : "shared") + ".numDroppedEvents";
                for (org.apache.spark.metrics.source.Source src : scala.jdk.javaapi.CollectionConverters.asJava(
                        env.metricsSystem().getSourcesByName("LiveListenerBus"))) {
                    c = src.metricRegistry().getCounters().get(name);
                    if (c != null) break;
                }
                if (c == null) return 0L;
                droppedCounter = c;
            }
            return Math.max(0L, c.getCount());
        } catch (Throwable t) {
            return 0L;  // not knowing of drops records the run as it always did
        }
    }

    /** Hand over the last batch (the caller then waits for it, outside the lock). */
    private void finish(String status) {
        if (finished) return;
        statusFinal = status;
        if (droppedTaskRows > 0) {
            // the warning went out with the first dropped row; only now is the count known
            String msg = "sparkpredict: " + droppedTaskRows + " task rows of this application were dropped "
                + "while the store could not keep up; its stage and run rows still count every task";
            LOG.warn(msg);
            setError(msg);
        }
        snapshot(true);
        finished = true;
    }

    /** Wait, bounded, for the writer to store the last batch; say so when it could not. */
    private void awaitLastWrite() throws InterruptedException {
        Flusher f = flusher;
        if (f == null) return;
        String err = f.awaitLast(settings.stopTimeoutMs);
        if (err != null) {
            String msg = err.startsWith("sparkpredict") ? err : "sparkpredict: " + err;
            setError(msg);
            LOG.error(msg);
        }
    }

    /**
     * Hand everything new since the last snapshot, with an updated run row, to the writer.
     * O(executors alive) plus the move of the pending lists: cheap enough for Spark's listener
     * thread, which never waits for the store here.
     */
    private void snapshot(boolean last) {
        if (disabled || flusher == null) return;
        stagesSinceFlush = 0;
        String runId = run.runId();
        long now = Math.max(System.currentTimeMillis(), lastUpdatedMs + 1);
        lastUpdatedMs = now;
        Map<Tables.Table, List<Object[]>> batch = new HashMap<>();
        batch.put(Tables.EXECUTORS, run.executorRows(last));
        batch.put(Tables.STAGES, pendingStages);
        batch.put(Tables.TASKS, pendingTasks);
        batch.put(Tables.HOST_SAMPLES, hostRows(run.startMs()));
        batch.put(Tables.STAGE_SCANS, pendingScans);
        List<Object[]> runs = new ArrayList<>();
        runs.add(run.runRow(settings, last ? statusFinal : "running", now, last));
        batch.put(Tables.RUNS, runs);
        // with the final run row only: a running run's measured input is a part of it, and one
        // file a flush more would cost every later read of the store
        List<Object[]> inputs = new ArrayList<>();
        if (last) inputs.add(run.inputRow(now));
        batch.put(Tables.RUN_INPUTS, inputs);
        for (List<Object[]> rows : batch.values()) {
            for (Object[] r : rows) r[0] = runId;
        }
        pendingStages = new ArrayList<>();
        pendingTasks = new ArrayList<>();
        pendingScans = new ArrayList<>();
        flusher.submit(new Flusher.Batch(batch, last));
    }

    /** Host samples queued by {@link HostMetricsPlugin} since the last flush (none without the plugin). */
    private static List<Object[]> hostRows(long sinceMs) {
        List<Object[]> out = new ArrayList<>();
        Tables.Table t = Tables.HOST_SAMPLES;
        int[] at = new int[HostSampler.FIELDS.length];  // by name: the two lists may order differently
        for (int i = 0; i < at.length; i++) at[i] = t.col(HostSampler.FIELDS[i]);
        for (HostSampler.Sample s : HostMetricsPlugin.drain()) {
            if (s.timeMs < sinceMs) continue;  // a previous application's, in the same JVM
            Row r = new Row(t);
            r.set("executor_id", s.executorId);
            r.set("host", s.host);
            r.set("time_ms", s.timeMs);
            for (int i = 0; i < s.values.length; i++) {
                Long v = s.values[i];
                r.values[at[i]] = (v != null && t.kinds[at[i]] == Tables.Kind.INT) ? (Object) v.intValue() : v;
            }
            out.add(r.values);
        }
        return out;
    }

    // ---- failure handling and hooks ------------------------------------------------------

    /**
     * An ordinary callback failed on an event ({@code where}, what it threw): the event is lost,
     * as those Spark drops from a full queue are, and recording goes on. One unexpected event
     * (a shape this code did not foresee, another library's malformed event on the bus) turned
     * the listener off for the rest of the application: a driver that runs for weeks stopped
     * recording at it. The run counts the events lost and its note says so
     * ({@link RunRecord#eventLost}). The first is logged with its stack trace; later ones at
     * 2, 4, 8, ... events, without. A callback that threw may have done part of its work:
     * task ends count nothing until all of the event is read (see {@link #taskEnd}), job
     * starts note nothing until their stages are read, stage completions count nothing until
     * their row is built, and the pending rows are kept (not cleared, as a stop clears them),
     * so the stage sums, the run's totals and the task rows still agree. What is left (a
     * snapshot that threw after taking the executor rows or host samples it hands over, a
     * ScanInput update half done, which turns the scan rule off) the run's note covers: it
     * says the events were recorded in part or not at all. More than {@link #MAX_LOST_EVENTS}:
     * the listener stops ({@link #stopWithLastBatch}).
     */
    private void lost(String where, Throwable t) {
        if (t instanceof InterruptedException) Thread.currentThread().interrupt();
        int n;
        synchronized (this) {
            n = run.eventLost(where, t);
        }
        if (n > MAX_LOST_EVENTS) {
            stopWithLastBatch("sparkpredict listener stopped recording this application after failing on " + n
                + " events, more than the " + MAX_LOST_EVENTS + " it goes on after (the last in " + where + ": "
                + t + ")", t);
            return;
        }
        String msg = "sparkpredict listener failed in " + where + " and lost that event (" + n
            + (n == 1 ? " event" : " events") + " lost in this application; recording goes on): " + t;
        setError(msg);
        if (n == 1) LOG.error(msg, t);
        else if (Integer.bitCount(n) == 1) LOG.error(msg + " (the stack trace is logged for the first only)");
    }

    /**
     * More than {@link #MAX_LOST_EVENTS} lost, or the JVM's own error in a callback: hand over a
     * last batch (the rows recorded so far and the run, incomplete, saying {@code msg}) and stop
     * recording; the writer still writes it, and the application's end or the JVM's exit waits
     * for it. When even that fails, or there is no run to end, the listener turns off as
     * {@link #fail} does (the run then keeps its last written row).
     */
    private void stopWithLastBatch(String msg, Throwable t) {
        boolean handed = false;
        synchronized (this) {
            if (disabled) return;
            if (finished) {
                handed = true;  // its last batch is handed over already: the writer goes on with it
            } else if (started && flusher != null) {
                try {
                    finish(run.stoppedRecording(msg));
                    handed = true;
                } catch (Throwable ignored) {
                    // said by fail below, which drops what could not be handed over
                }
            }
            if (handed) {
                stoppedWithLastBatch = true;
                disabled = true;
            }
        }
        if (!handed) {
            fail(msg, null);
            return;
        }
        setError(msg);
        LOG.error(msg, t);
        if (current == this) HostMetricsPlugin.listenerStopped();
    }

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
            pendingScans = new ArrayList<>();
            notifyAll();
        }
        removeShutdownHook();
    }

    /**
     * Record {@code message} as the JVM's last listener error (what listener_error returns),
     * unless a later application's listener has taken over: its errors are the ones to tell.
     */
    private void setError(String message) {
        if (current != this) return;
        synchronized (ERRORS) {
            if (errorCount++ == 0) firstError = message;
            lastError = message;
        }
    }

    private void installHooks() {
        shutdownHook = new Thread(this::onShutdown, "sparkpredict-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        TermSignal.install();
        MainThreadRaised.install();
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
            while (true) {
                boolean begun;
                synchronized (this) {
                    if (finished || disabled) break;
                    begun = started;
                }
                long waited = System.currentTimeMillis() - start;
                // A listener whose SparkContext failed to start hears nothing, and no context is
                // active for it: no need to wait. Asked without this listener's lock: getActive
                // takes Spark's context lock, which a context failing inside getOrCreate holds
                // while its stop waits for the listener bus, whose thread may wait for this lock.
                if (waited > 45_000 || ((waited > 2_000 || !begun) && !contextActive())) break;
                synchronized (this) {
                    if (finished || disabled) break;
                    wait(200);
                }
            }
            synchronized (this) {
                if (!finished && !disabled) {
                    // Its SparkContext never started: no run to record, no last batch to wait for.
                    if (!started) return;
                    finish(run.exitedWithoutEnd(raised(), TermSignal.received(), droppedEvents(), queue));
                }
            }
            // Whoever handed over the last batch (this hook, the application end on Spark's
            // listener thread, or the stop after too many lost events), the JVM must not halt
            // before the writer stored it.
            if (!disabled || stoppedWithLastBatch) awaitLastWrite();
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
}
