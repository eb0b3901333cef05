package io.sparkpredict;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.storage.RDDInfo;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The stages of the application: task sums per running stage attempt, the job each stage
 * belongs to, and the stages table's rows built from them when a stage attempt completes;
 * also the run's stage count and measured input, which only the stages can tell.
 *
 * <p>Not thread-safe: the listener calls it holding its own lock.
 */
final class StageTracker {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One running stage attempt's sums over its task ends. */
    static final class Agg {
        final long[] lsum = new long[Tables.N_METRICS];
        final double[] dsum = new double[Tables.N_METRICS];
        long[] durations = new long[16];
        int n;
        int failed;
        /** Successful task ends that read input, in the order they ended: partition and bytes. */
        int[] readIndex = new int[0];
        long[] readBytes = new long[0];
        int nRead;
        /** Its tasks are ShuffleMapTasks: its input is counted by its own RDD (mapInputCounted). */
        boolean mapStage;
        /** The partitions its successful tasks ran (a SQL file scan counts its share of them). */
        final BitSet ran = new BitSet();

        /** A successful task end's input (the run's input counts each partition once). */
        void read(int index, long bytes) {
            if (index >= 0) ran.set(index);
            if (bytes <= 0) return;
            if (nRead == readIndex.length) {
                int size = Math.max(16, nRead * 2);
                readIndex = Arrays.copyOf(readIndex, size);
                readBytes = Arrays.copyOf(readBytes, size);
            }
            readIndex[nRead] = index;
            readBytes[nRead++] = bytes;
        }

        /** Add one task end's {@link TaskRows#metricValues}. */
        void add(Object[] metrics, long durationMs, boolean ok) {
            for (int i = 0; i < Tables.N_METRICS; i++) {
                Object v = metrics[i];
                if (v instanceof Long) lsum[i] += (Long) v;
                else if (v instanceof Double) dsum[i] += (Double) v;
            }
            if (n == durations.length) durations = Arrays.copyOf(durations, n * 2);
            durations[n++] = durationMs;
            if (!ok) failed++;
        }
    }

    // Per-stage state lives while its stage or job runs: a driver that runs for weeks (a Thrift
    // server, a streaming query, a notebook) must not keep ~130 bytes for every stage it ran.
    /** Stage attempts submitted and not completed; a task end of any other attempt is not summed. */
    private final Map<Long, Agg> stageAggs = new HashMap<>();
    /** Running jobs' stage ids, to drop their stageToJob entries when they end. */
    private final Map<Integer, int[]> runningJobStages = new HashMap<>();
    /**
     * Persisted RDDs a succeeded stage has computed: later stages over them read the cache.
     * Forgotten when unpersisted (by the application, or by Spark's cleaner once the RDD is
     * garbage): a streaming query that persists each micro-batch's data kept one per batch for
     * as long as it ran, and an RDD persisted again after its blocks were dropped reads its
     * source again.
     */
    private final Set<Integer> materialisedRdds = new HashSet<>();
    /**
     * Per stage id, the partitions whose input the run has counted: a later attempt (after a
     * FetchFailed) re-runs lost partitions, which read the same data again. Dropped with the
     * stage's jobs, as stageToJob.
     */
    private final Map<Integer, BitSet> inputCounted = new HashMap<>();
    /**
     * Per map stage's own RDD, the partitions whose input the run has counted, kept beyond the
     * stage's jobs: a map stage whose output an executor's loss took is re-run by a later job
     * under a new stage id when adaptive execution (Spark's default) planned it as a job of its
     * own, over the same RDD. Counted by stage id, a killed executor doubled the run's input.
     * The most recently used {@link #MAP_RDDS_KEPT} only: a driver that runs for weeks must not
     * keep one for every map stage it ran, and a re-run follows its loss within the query.
     */
    static final int MAP_RDDS_KEPT = 10_000;
    private final Map<Integer, BitSet> mapInputCounted = new java.util.LinkedHashMap<Integer, BitSet>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Integer, BitSet> eldest) {
            return size() > MAP_RDDS_KEPT;
        }
    };
    private final Map<Integer, Integer> stageToJob = new HashMap<>();
    /** The SQL execution of each stage of a running job (the first running job's that has it). */
    private final Map<Integer, String> stageExecution = new HashMap<>();
    /** Stage attempts completed, failed ones included (the run row's num_stages). */
    int numStages;
    /** What the run's stages without SQL file scans read from data sources. */
    private long taskInput;
    /** The run's SQL file scans, counted by the size of their files. */
    final ScanInput scans = new ScanInput();
    /**
     * The stage_scans row of the attempt {@link #completed} last returned a row of: set when it
     * ran a known SQL file scan, else null.
     */
    Object[] scanRow;

    /** What the run's stages read from data sources (the run row's measured input_bytes). */
    long measuredInput() {
        return taskInput + scans.counted;
    }

    private static long key(int stage, int attempt) { return ((long) stage << 32) | (attempt & 0xffffffffL); }

    /** Per-stage entries held: stage attempts running, the stages of running jobs and their counted input. */
    int tracked() {
        return stageAggs.size() + stageToJob.size() + inputCounted.size();
    }

    /** Note a job's stages; all of the event is read before anything is noted (an event it throws on notes nothing). */
    void jobStarted(SparkListenerJobStart e) {
        List<Object> ids = new ArrayList<>(CollectionConverters.asJava(e.stageIds()));
        int[] stages = new int[ids.size()];
        for (int i = 0; i < stages.length; i++) stages[i] = (Integer) ids.get(i);
        String execution = e.properties() != null ? e.properties().getProperty("spark.sql.execution.id") : null;
        for (int i = 0; i < stages.length; i++) {
            stageToJob.putIfAbsent(stages[i], e.jobId());
            if (execution != null) stageExecution.putIfAbsent(stages[i], execution);
        }
        runningJobStages.put(e.jobId(), stages);
    }

    /**
     * Forget the job's stages once no running job has them (a stage keeps the first job that
     * had it, as the event-log reader assigns it), and the sums of every stage attempt that no
     * running job has: Spark posts a stage's completion before its job's end, so such sums
     * stayed only when Spark dropped the completion from a full listener queue (with a
     * duration per task, for as long as the driver ran).
     */
    void jobEnded(int jobId) {
        int[] stages = runningJobStages.remove(jobId);
        Set<Integer> running = new HashSet<>();
        for (int[] other : runningJobStages.values()) {
            for (int t : other) running.add(t);
        }
        if (stages != null) {
            for (int s : stages) {
                if (!running.contains(s)) {
                    stageToJob.remove(s);
                    inputCounted.remove(s);
                    stageExecution.remove(s);
                }
            }
        }
        stageAggs.keySet().removeIf(k -> !running.contains((int) (k >> 32)));
    }

    /** The RDD's cached blocks were dropped (SparkListenerUnpersistRDD). */
    void unpersisted(int rddId) {
        materialisedRdds.remove(rddId);
    }

    /** Persisted RDDs remembered as computed (a diagnostic). */
    int materialised() {
        return materialisedRdds.size();
    }

    void submitted(StageInfo s) {
        stageAggs.putIfAbsent(key(s.stageId(), s.attemptNumber()), new Agg());
    }

    /** The attempt's sums while it runs; null once completed, or when never submitted. */
    Agg running(int stageId, int attempt) {
        return stageAggs.get(key(stageId, attempt));
    }

    /**
     * Stage attempts completed lately: Spark posts a failed barrier stage attempt's completion
     * again for each of its tasks that ends after it (and once more when it aborts the job).
     */
    private final Set<Long> completedAttempts = java.util.Collections.newSetFromMap(
        new java.util.LinkedHashMap<Long, Boolean>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                return size() > MAP_RDDS_KEPT;
            }
        });

    /**
     * The stages row of a completed stage attempt, its sums dropped; null when that attempt was
     * completed already. The row is built from the event, and the scan rule run, before the
     * stage is counted: an event it throws on (which the listener loses) leaves the stage
     * uncounted, its sums kept until its jobs end, and the run's num_stages the number of its
     * stage rows. Nothing after the counting reads the event or can throw but the JVM's own
     * errors, which stop the recording.
     */
    Object[] completed(StageInfo s) throws IOException {
        // read once: a getter read again after the attempt is counted completed, and throwing
        // there, left it counted with no row, and its next completion taken for a repeat
        scanRow = null;
        int stageId = s.stageId();
        int attempt = s.attemptNumber();
        long key = key(stageId, attempt);
        Agg held = stageAggs.get(key);
        if (held == null && completedAttempts.contains(key)) return null;
        Agg agg = held != null ? held : new Agg();
        Row r = new Row(Tables.STAGES);
        r.set("job_id", stageToJob.get(stageId));
        r.set("stage_id", stageId);
        r.set("stage_attempt_id", attempt);
        r.set("name", s.name());
        r.set("num_tasks", s.numTasks());
        List<Object> parents = new ArrayList<>(CollectionConverters.asJava(s.parentIds()));
        r.set("parent_stage_ids_json", JSON.writeValueAsString(parents));
        List<String> rdds = new ArrayList<>();
        List<Integer> persisted = new ArrayList<>();
        boolean readsCache = false;
        boolean anyPersisted = false;
        List<RDDInfo> infos = CollectionConverters.asJava(s.rddInfos());
        // The stage's own RDD comes first, then its narrow ancestors: a stage that ran all of its
        // own partitions computed them whole (a coalesce(1) too). `df.cache(); df.show()` runs
        // one partition, and the count after it reads the others from the source.
        Integer ownRdd = infos.isEmpty() ? null : infos.get(0).id();
        int ownPartitions = infos.isEmpty() ? 0 : infos.get(0).numPartitions();
        boolean whole = infos.isEmpty() || s.numTasks() >= ownPartitions;
        for (RDDInfo ri : infos) {
            rdds.add(ri.name());
            if (ri.storageLevel().isValid()) {
                anyPersisted = true;
                if (whole) persisted.add(ri.id());
                readsCache |= materialisedRdds.contains(ri.id());
            }
        }
        r.set("rdd_names_json", JSON.writeValueAsString(rdds));
        Long sub = s.submissionTime().isDefined() ? (Long) s.submissionTime().get() : null;
        Long comp = s.completionTime().isDefined() ? (Long) s.completionTime().get() : null;
        r.set("submission_ms", sub);
        r.set("completion_ms", comp);
        r.set("duration_ms", sub != null && comp != null ? comp - sub : null);
        boolean failed = s.failureReason().isDefined();
        r.set("status", failed ? "failed" : "succeeded");
        r.set("failure_reason", failed ? s.failureReason().get() : null);
        r.set("num_task_rows", agg.n);
        r.set("num_failed_tasks", agg.failed);
        int first = r.metricsAt();
        for (int i = 0; i < Tables.N_METRICS; i++) {
            r.values[first + i] = Tables.METRICS[i][1] == Tables.Kind.DOUBLE ? (Object) agg.dsum[i] : (Object) agg.lsum[i];
        }
        if (agg.n > 0) {
            long[] d = Arrays.copyOf(agg.durations, agg.n);
            Arrays.sort(d);
            r.set("task_duration_min_ms", (double) d[0]);
            r.set("task_duration_median_ms", quantile(d, 0.5));
            r.set("task_duration_p90_ms", quantile(d, 0.9));
            r.set("task_duration_max_ms", (double) d[d.length - 1]);
        }
        long cacheHits = failed ? 0L : diskCacheHitBytes(s);
        // A stage that ran SQL file scans counts their files' size instead of its tasks' input
        // metric (which Parquet's vectored reads leave at the footers) and Databricks' cache
        // hits. A scan that ran is a source read even in a stage over a cached RDD (a union).
        // A failure there turns the scan rule off, never the recording; before the counting, so
        // that the JVM's own error there (which stops the recording) leaves the stage uncounted.
        String execution = stageExecution.get(stageId);
        boolean persistedRdd = anyPersisted;
        // A DataFrameReader's job reads a schema (a CSV header, inferSchema): no input of the
        // run's, whose actions read the files again; unless it computed a persisted RDD
        // (`spark.read.json(sc.textFile(p).cache())`), whose cached blocks they read instead
        boolean probe = ScanInput.isReaderProbe(s.details()) && !anyPersisted;
        boolean scanned = scans.guard(() -> scans.stageCompleted(s, ownRdd, ownPartitions, agg.ran, execution,
            persistedRdd, probe));
        Object[] builtScanRow = null;
        if (scanned) {
            Row sr = new Row(Tables.STAGE_SCANS);
            sr.set("stage_id", stageId);
            sr.set("stage_attempt_id", attempt);
            sr.set("scan_files", scans.stageFiles);
            builtScanRow = sr.values;
        }
        // the row is built: from here on the attempt is completed
        stageAggs.remove(key);
        completedAttempts.add(key);
        numStages++;
        // The run's input is what its stages read from data sources. Spark also counts a read of
        // a cached block as input, so a stage over an already computed persisted RDD is left
        // out (an iterative job would otherwise count its input once per pass). Stages with
        // parents count too: a scan can wait on other stages (Databricks' pruning, unions).
        // Each partition once, by its first successful task: a failed or killed task's partial
        // read, a speculative copy and a partition re-run after its executor was lost read the
        // same data again. A failed attempt's successful tasks count too: Spark keeps their
        // output, and no later attempt reads those partitions.
        // A map stage's partitions by its own RDD, kept across jobs (mapInputCounted); a result
        // stage's by its stage id while its jobs run (a later action over the same RDD reads the
        // source again). As the event-log ingest keys them (eventlog_rows, map stages).
        Integer mapRdd = agg.mapStage ? ownRdd : null;
        if (!readsCache && !scanned && !probe) taskInput += countOnce(stageId, mapRdd, agg) + cacheHits;
        if (!failed) materialisedRdds.addAll(persisted);
        scanRow = builtScanRow;
        return r.values;
    }

    /**
     * The input of the attempt's partitions not counted yet for its stage id (a map stage: its
     * own RDD, {@code mapRdd}), which it marks counted.
     */
    private long countOnce(int stageId, Integer mapRdd, Agg agg) {
        if (agg.nRead == 0) return 0L;
        // remembered while a running job has the stage (jobEnded forgets it), as stageToJob
        BitSet done = mapRdd != null ? mapInputCounted.computeIfAbsent(mapRdd, k -> new BitSet())
            : stageToJob.containsKey(stageId) ? inputCounted.computeIfAbsent(stageId, k -> new BitSet())
            : new BitSet();
        long total = 0;
        for (int i = 0; i < agg.nRead; i++) {
            int idx = agg.readIndex[i];
            if (idx < 0 || done.get(idx)) continue;
            done.set(idx);
            total += agg.readBytes[i];
        }
        return total;
    }

    /**
     * The stage accumulable in which Databricks' disk cache counts the bytes its scans served
     * from the cache. A task's input metric counts only the misses, so a warm cache would make
     * the same job's input look small (eventlog_rows.DISK_CACHE_HITS in the ingest).
     */
    static final String DISK_CACHE_HITS = "cache hits size";

    /** The bytes of {@link #DISK_CACHE_HITS} among the stage's accumulables; 0 when none (every Spark but Databricks'). */
    static long diskCacheHitBytes(StageInfo s) {
        long total = 0;
        for (org.apache.spark.scheduler.AccumulableInfo a : CollectionConverters.asJava(s.accumulables()).values()) {
            if (!a.name().isDefined() || !DISK_CACHE_HITS.equals(a.name().get()) || !a.value().isDefined()) continue;
            Object v = a.value().get();
            try {
                long bytes = v instanceof Number ? ((Number) v).longValue() : Long.parseLong(String.valueOf(v).trim());
                total += Math.max(0L, bytes);
            } catch (NumberFormatException e) {
                // not a byte count: left out, as the ingest leaves it out
            }
        }
        return total;
    }

    /** Linear interpolation between closest ranks, as numpy.quantile's default. */
    static double quantile(long[] sorted, double q) {
        double pos = q * (sorted.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = (int) Math.ceil(pos);
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
    }
}
