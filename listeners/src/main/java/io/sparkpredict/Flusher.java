package io.sparkpredict;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.fs.UnsupportedFileSystemException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the listener's batches into the store on a thread of its own.
 *
 * <p>Spark delivers events to the listener on one thread per queue; while a callback runs, the
 * queue (10,000 events by default, shared with the application's other extra listeners) fills,
 * and once it is full Spark drops events for every listener on it, and SparkContext.stop()
 * waits for it to drain. Writing Parquet there (10 us a task row locally, far more on a remote
 * store) or waiting on a store that hangs would stall or drop the application's events, so
 * callbacks only hand rows over and this thread writes them.
 *
 * <p>Batches handed over while a write runs, or within {@code intervalMs} of the last write, are
 * merged into one write (the newest run row wins): an application with thousands of short
 * jobs makes a few files per interval, not per job. They are merged as they arrive, not when
 * the write starts: behind a write that hangs (a dead NFS mount) a driver that runs for days
 * would otherwise hold every job's run row (its properties_json alone is kilobytes) and every
 * host sample. A failed write keeps its rows and retries with the next batch, waiting longer
 * after each failure. Store errors that cannot heal (a foreign folder, a file system Hadoop has
 * no implementation for) stop recording.
 *
 * <p>The thread starts with the first batch: a listener whose SparkContext failed to start
 * (another of spark.extraListeners could not load) hears nothing, and kept an idle thread for
 * the rest of the JVM's life, one per attempt.
 */
final class Flusher implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(Flusher.class);
    private static final long MAX_BACKOFF_MS = 60_000;
    /**
     * Writes are at least a tenth of the application's age apart, up to this: a Structured
     * Streaming query or a driver of many short jobs wrote one batch (about three files) per
     * interval for as long as it ran, 17,000 a day at the default 5 s, each listed by every read
     * of the store until the run ended and could be compacted. Stretched, a day is about 200
     * batches, and the rows in the store lag a running application by at most a tenth of its
     * age (task rows or host samples beyond flushEveryTasks, which hold the driver's memory,
     * and the last batch are written at once).
     */
    static final long MAX_STRETCH_MS = 600_000;
    static final long STRETCH_DIVISOR = 10;
    /** Tries at writing the last batch, the n-th after LAST_RETRY_MS << (n - 2): 1 s, 2 s, 4 s. */
    static final int LAST_ATTEMPTS = 4;
    static final long LAST_RETRY_MS = 1_000;
    private static final AtomicLong WRITE_NS = new AtomicLong();

    /** Wall time this JVM's flushers spent writing batches (ns), off Spark's listener thread. */
    static long writeNanos() { return WRITE_NS.get(); }

    /** The listener that owns this writer: told when a write fails, and when recording must stop. */
    interface Owner {
        /** A write failed; its rows are kept for the next, unless it was the last. */
        void writeFailed(String message);

        /** The store can never be written: the listener stops recording. */
        void stop(String message);
    }

    /**
     * One snapshot of the listener's rows: every table's new rows and the run row as of now.
     * Its lists are the batch's own once handed over (the listener starts new ones), so that
     * later batches can be appended to them.
     */
    static final class Batch {
        final Map<Tables.Table, List<Object[]>> rows;
        boolean last;
        int taskRows;

        Batch(Map<Tables.Table, List<Object[]>> rows, boolean last) {
            this.rows = rows;
            this.last = last;
            List<Object[]> t = rows.get(Tables.TASKS);
            this.taskRows = t == null ? 0 : t.size();
        }

        /**
         * Take a newer batch's rows after this one's; its run row replaces this one's. Host rows
         * beyond {@code maxHostRows} (a store that keeps failing or hangs): the newest are kept.
         * Stage rows beyond {@code maxStageRows}: the newer are dropped, as task rows beyond
         * their cap are; returns how many.
         */
        int absorb(Batch newer, int maxHostRows, int maxStageRows) {
            for (Map.Entry<Tables.Table, List<Object[]>> e : newer.rows.entrySet()) {
                if (e.getKey() == Tables.RUNS) rows.put(Tables.RUNS, e.getValue());
                else rows.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).addAll(e.getValue());
            }
            last |= newer.last;
            taskRows += newer.taskRows;
            List<Object[]> hosts = rows.get(Tables.HOST_SAMPLES);
            if (hosts != null && hosts.size() > maxHostRows) {
                hosts.subList(0, hosts.size() - maxHostRows).clear();
            }
            List<Object[]> stages = rows.get(Tables.STAGES);
            if (stages == null || stages.size() <= maxStageRows) return 0;
            int dropped = stages.size() - maxStageRows;
            stages.subList(maxStageRows, stages.size()).clear();
            // the dropped stages' scan rows go with them (a stage has one at most)
            List<Object[]> scans = rows.get(Tables.STAGE_SCANS);
            if (scans != null && !scans.isEmpty()) {
                int sid = Tables.STAGES.col("stage_id"), sat = Tables.STAGES.col("stage_attempt_id");
                java.util.Set<List<Object>> kept = new java.util.HashSet<>();
                for (Object[] r : stages) kept.add(Arrays.asList(r[sid], r[sat]));
                int id = Tables.STAGE_SCANS.col("stage_id"), at = Tables.STAGE_SCANS.col("stage_attempt_id");
                scans.removeIf(r -> !kept.contains(Arrays.asList(r[id], r[at])));
            }
            return dropped;
        }

        int rows(Tables.Table t) {
            List<Object[]> r = rows.get(t);
            return r == null ? 0 : r.size();
        }
    }

    private final StoreWriter writer;
    private final long intervalMs;
    private final int chunkTaskRows;
    private final int maxHostRows;
    /**
     * Stage rows held at most behind a store that fails or hangs. Only task rows were capped:
     * a streaming driver whose store stayed unwritable (expired credentials, a folder it may
     * not write, an outage) held every stage row it ran, about a kilobyte each, until the heap
     * ran out.
     */
    private final int maxStageRows;
    /** Stage rows dropped at that cap (only this writer's thread and submit, under lock, add). */
    private final AtomicLong droppedStageRows = new AtomicLong();
    private final Owner owner;
    private final Thread thread;
    /** Task rows queued or kept after a failed write: the listener stops adding beyond its cap. */
    private final AtomicLong heldTaskRows = new AtomicLong();
    /** When the application's recording began (the interval stretches with its age). */
    private final long createdMs = System.currentTimeMillis();

    private final Object lock = new Object();
    // guarded by lock
    /** What waits for the writer: every batch handed over since it last took, merged. */
    private Batch pending;
    private boolean started;
    private boolean lastQueued;
    private boolean done;
    private boolean stopped;
    private long nextAttemptMs;
    private String finalError;

    // only the writer thread changes these (carry is read for diagnostics)
    private volatile Batch carry;
    /** The batch a write holds now, counted by {@link #heldRows} (it is neither pending nor carried). */
    private volatile Batch writing;
    private int failures;
    private boolean errorLogged;
    private boolean ingestChecked;

    Flusher(StoreWriter writer, long intervalMs, int chunkTaskRows, int maxHostRows, int maxStageRows, Owner owner) {
        this.writer = writer;
        this.intervalMs = Math.max(0, intervalMs);
        this.chunkTaskRows = Math.max(1, chunkTaskRows);
        this.maxHostRows = maxHostRows;
        this.maxStageRows = Math.max(1, maxStageRows);
        this.owner = owner;
        thread = new Thread(this, "sparkpredict-writer");
        // A daemon: a JVM whose application never ended must not wait for it (the shutdown
        // hook hands over the last batch and waits for it, bounded).
        thread.setDaemon(true);
    }

    long heldTaskRows() { return heldTaskRows.get(); }

    /** Rows of {@code t} the driver holds for the store: waiting for the writer, being written,
     *  or kept after a failed write (a diagnostic). */
    int heldRows(Tables.Table t) {
        Batch c = carry, w = writing;
        synchronized (lock) {
            return (pending == null ? 0 : pending.rows(t)) + (c == null ? 0 : c.rows(t))
                + (w == null || w == c ? 0 : w.rows(t));
        }
    }

    /** Hand over a snapshot; never blocks on the store. Ignored after the last one or a stop. */
    void submit(Batch b) {
        synchronized (lock) {
            if (stopped || lastQueued) return;
            if (pending == null) pending = b;
            else droppedStages(pending.absorb(b, maxHostRows, maxStageRows));
            heldTaskRows.addAndGet(b.taskRows);
            lastQueued |= b.last;
            if (!started) {
                started = true;
                thread.start();
            }
            lock.notifyAll();
        }
    }

    /**
     * Wait until the last batch is written (or failed), at most {@code timeoutMs}. Returns null
     * when it was written, else what went wrong.
     */
    String awaitLast(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (lock) {
            while (!done) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    return "the store did not finish writing the run's last batch within " + timeoutMs
                        + " ms (spark.sparkpredict.stopTimeoutMs); it is written if the driver's JVM lives on";
                }
                lock.wait(left);
            }
            return finalError;
        }
    }

    /** Stop without writing anything more (the listener stopped recording). */
    void stop() {
        synchronized (lock) {
            stopped = true;
            done = true;
            pending = null;
            lock.notifyAll();
        }
        heldTaskRows.set(0);
    }

    @Override
    public void run() {
        try {
            while (true) {
                Batch taken;
                synchronized (lock) {
                    while (true) {
                        if (stopped) return;
                        if (pending != null) {
                            long now = System.currentTimeMillis();
                            // Many task rows are written without waiting for the interval (they
                            // are what holds the driver's memory), unless the store is failing;
                            // so are host samples at their cap, beyond which absorb drops the
                            // oldest (behind a stretched interval, minutes of them).
                            boolean urgent = lastQueued || (carry == null && (pending.taskRows >= chunkTaskRows
                                || pending.rows(Tables.HOST_SAMPLES) >= maxHostRows));
                            if (urgent || now >= nextAttemptMs) break;
                            lock.wait(nextAttemptMs - now);
                        } else {
                            lock.wait();
                        }
                    }
                    taken = pending;
                    pending = null;
                }
                Batch merged = carry;
                if (merged == null) merged = taken;
                else droppedStages(merged.absorb(taken, maxHostRows, maxStageRows));
                carry = null;
                if (!writeHeld(merged, 1)) return;
                // The last batch has no next flush to retry with: a store that fails for a
                // moment (an object store's throttling, a NameNode failover) gets a few more
                // tries while stop() waits, not the loss of the run's last rows.
                for (int attempt = 2; merged.last && carry == merged && attempt <= LAST_ATTEMPTS; attempt++) {
                    synchronized (lock) {
                        long until = System.currentTimeMillis() + (LAST_RETRY_MS << (attempt - 2));
                        for (long left; !stopped && (left = until - System.currentTimeMillis()) > 0; ) {
                            lock.wait(left);
                        }
                        if (stopped) return;
                    }
                    carry = null;
                    if (!writeHeld(merged, attempt)) return;
                }
                if (merged.last) {
                    long dropped = droppedStageRows.get();
                    if (dropped > 0) {
                        // the warning went out with the first; only now is the count known
                        String msg = "sparkpredict: " + dropped + " stage rows of this application were dropped "
                            + "while the store could not keep up; its run row still counts every stage";
                        LOG.warn(msg);
                        owner.writeFailed(msg);
                    }
                    synchronized (lock) {
                        done = true;
                        lock.notifyAll();
                    }
                    return;
                }
            }
        } catch (Throwable t) {
            permanent("sparkpredict listener's writer failed and stopped recording this application: " + t);
        }
    }

    /** Count stage rows {@link Batch#absorb} dropped; the first drop is said at once. */
    private void droppedStages(int n) {
        if (n <= 0 || droppedStageRows.getAndAdd(n) > 0) return;
        String msg = "sparkpredict: " + maxStageRows + " stage rows wait for the store (not writable, or slower "
            + "than the stages); further stage rows are dropped until it takes them (the run row is kept)";
        LOG.warn(msg);
        owner.writeFailed(msg);
    }

    /**
     * The wait after a write: the interval, or a tenth of the application's age where longer
     * (see {@link #MAX_STRETCH_MS}). An interval of 0 asks for every batch as it comes, and gets it.
     */
    long interval(long nowMs) {  // ms
        if (intervalMs == 0) return 0;
        return Math.max(intervalMs, Math.min(MAX_STRETCH_MS, (nowMs - createdMs) / STRETCH_DIVISOR));
    }

    /** {@link #write}, the batch counted by {@link #heldRows} meanwhile. */
    private boolean writeHeld(Batch b, int attempt) {
        writing = b;
        try {
            return write(b, attempt);
        } finally {
            writing = null;
        }
    }

    /**
     * One write attempt; false when recording must stop. A failed last batch is kept in
     * {@code carry} for another try until its {@link #LAST_ATTEMPTS}th {@code attempt}.
     */
    private boolean write(Batch b, int attempt) {
        long t0 = System.nanoTime();
        String runId = String.valueOf(b.rows.get(Tables.RUNS).get(0)[0]);  // set by the listener's snapshot
        try {
            writer.writeBatch(StoreWriter.newBatchId(runId), b.rows);
            heldTaskRows.addAndGet(-b.taskRows);
            failures = 0;
            // After the first write (an ingest before it stored a copy) and the last (one that
            // raced the first): later ingests find the listener's run and store nothing.
            if (!ingestChecked || b.last) {
                ingestChecked = true;
                dropIngestedCopies(runId);
            }
            synchronized (lock) {
                long now = System.currentTimeMillis();
                nextAttemptMs = now + interval(now);
            }
            return true;
        } catch (StoreWriter.ForeignStoreException e) {
            permanent(e.getMessage());
            return false;
        } catch (UnsupportedFileSystemException e) {
            permanent(StoreWriter.noFileSystemMessage(writer.store(), e));
            return false;
        } catch (IOException | RuntimeException e) {
            writer.forgetFileSystem();  // closed under it: the next try asks Hadoop for a live one
            boolean lost = b.last && attempt >= LAST_ATTEMPTS;
            String what = !b.last ? "; rows are kept and retried at the next flush"
                : lost ? "; the run's last rows are lost (" + LAST_ATTEMPTS + " tries)"
                : "; the run's last rows are retried in " + (LAST_RETRY_MS << (attempt - 1)) / 1000 + " s";
            String msg = "sparkpredict: cannot write to store " + writer.store() + ": " + e + what
                + ". Fix: make the store writable or set spark.sparkpredict.store to a writable folder";
            owner.writeFailed(msg);
            if (!errorLogged || b.last) LOG.error(msg);
            else LOG.debug(msg);
            errorLogged = true;
            if (b.last && !lost) {
                carry = b;
            } else if (b.last) {
                heldTaskRows.addAndGet(-b.taskRows);
                synchronized (lock) {
                    finalError = msg;
                }
            } else {
                carry = b;
                failures = Math.min(failures + 1, 20);
                long backoff = Math.min(MAX_BACKOFF_MS, Math.max(intervalMs, 1000L) << Math.min(failures - 1, 10));
                synchronized (lock) {
                    nextAttemptMs = System.currentTimeMillis() + backoff;
                }
            }
            return true;
        } finally {
            WRITE_NS.addAndGet(System.nanoTime() - t0);
        }
    }

    /** Best effort: the rows this run wrote are stored whatever happens here. */
    private void dropIngestedCopies(String runId) {
        try {
            int n = writer.dropIngestedCopies(runId);
            if (n > 0) {
                LOG.info("sparkpredict: removed {} cop{} of run {} that `sparkpredict ingest` stored from its event "
                    + "log while the run was going; the listener's rows are the run's", n, n == 1 ? "y" : "ies", runId);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("sparkpredict: could not remove the copy of run {} that `sparkpredict ingest` stored from its "
                + "event log ({}); the store holds the run twice until the next `sparkpredict ingest` into it, "
                + "which removes that copy", runId, e.toString());
        }
    }

    private void permanent(String message) {
        synchronized (lock) {
            finalError = message;
        }
        stop();
        owner.stop(message);
    }
}
