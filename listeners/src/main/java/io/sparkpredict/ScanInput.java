package io.sparkpredict;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.sql.execution.SparkPlanInfo;
import org.apache.spark.sql.execution.metric.SQLMetricInfo;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The input of a run's SQL file scans, measured by the size of the files they read.
 *
 * <p>Spark's task input metric is not a file scan's input on Spark 4: Parquet there reads
 * "vectored" (on by default), fetching column chunks off the task's thread, and the metric
 * counts about the footers (a 17.5 MB scan counted as 41,460 bytes). Every SQL file scan tells the
 * driver the size of the files it selected ("size of files read", posted as a
 * SparkListenerDriverAccumUpdates): that is the scan's input here, whatever the reader fetched.
 * A stage whose accumulables hold a non-zero value of a scan's task-side metrics (the plan lists
 * each node's metric ids) ran that scan; a scan counts once per SQL execution that runs it (stages
 * over a persisted RDD sharing one count), in the share of its partitions that successful tasks
 * ran. The event-log ingest applies the same rule (eventlog_scans.py).
 *
 * <p>A scan that outputs no row lists no task-side metric (a CSV or JSON scan whose pushed filter
 * keeps no row). Such a scan in one stage with a scan that does list one (a union, a bucketed
 * join) ran in that stage too: the plan's nodes between stage boundaries
 * ({@link #STAGE_BOUNDARIES}) run in one stage, so the scans of one such fragment count together
 * where all the stage's partitions ran.
 *
 * <p>A scan also tells the driver how many files it selected ("number of files read"; Photon's
 * "files read"): a stage that ran known scans records the sum over them
 * ({@link #stageFiles}), the files its tasks were packed from, whatever share of them ran.
 *
 * <p>Not thread-safe: the listener calls it holding its own lock.
 */
final class ScanInput {
    static final String FILES_SIZE = "size of files read";
    /** A scan's driver metric of the files it selected: Spark's (and its GPU form's), Photon's. */
    static final String FILES_NUM = "number of files read";
    static final String FILES_NUM_PHOTON = "files read";
    /** Scans whose metric ids are kept, the most recently planned (eventlog_scans.SCANS_KEPT). */
    static final int SCANS_KEPT = 1_000;
    /** SQL executions remembered as ended, the latest (eventlog_scans.ENDED_KEPT keeps as many). */
    static final int ENDED_KEPT = 10_000;
    /**
     * Plan nodes whose children run in stages of their own (or not at all, a cached relation's
     * plan): a node whose name holds one of these ends a stage fragment (eventlog_scans.
     * STAGE_BOUNDARIES). Generous on purpose: a fragment split too finely only leaves a scan that
     * output no row to its stage's task metric.
     */
    static final String[] STAGE_BOUNDARIES = {"Exchange", "Stage", "Subquery", "Reused", "InMemory", "AdaptiveSparkPlan"};

    private static final class Scan {
        final long[] taskIds;
        Long filesBytes;
        /** Files the scan selected; null until the driver tells it (or where it never does). */
        Long numFiles;
        /** The FILES_NUM metric's id, or null. */
        final Long numId;
        /**
         * Per read of the scan (a SQL execution; null for stages over a persisted RDD, whose
         * reads of it one count shares) and per RDD a stage ran it in: its partitions and those
         * a successful task ran (null once all of them ran).
         */
        final Map<String, Map<Integer, Object[]>> reads = new HashMap<>();
        final Map<String, Long> counted = new HashMap<>();
        /** The other scans of its stage fragment in the latest plan that showed it. */
        long[] siblings = new long[0];

        Scan(long[] taskIds, Long numId) {
            this.taskIds = taskIds;
            this.numId = numId;
        }
    }

    /** Task-side metric id to its scan's FILES_SIZE id. */
    private final Map<Long, Long> scanOf = new HashMap<>();
    /** FILES_NUM metric id to its scan's FILES_SIZE id. */
    private final Map<Long, Long> numOf = new HashMap<>();
    private final LinkedHashMap<Long, Scan> scans = new LinkedHashMap<Long, Scan>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Scan> eldest) {
            if (size() <= SCANS_KEPT) return false;
            for (long i : eldest.getValue().taskIds) {
                if (eldest.getKey().equals(scanOf.get(i))) scanOf.remove(i);
            }
            Long n = eldest.getValue().numId;
            if (n != null && eldest.getKey().equals(numOf.get(n))) numOf.remove(n);
            return true;
        }
    };
    /**
     * Per running SQL execution, the scans it read: their reads of it end with it (one
     * DataFrame collected every minute for weeks must not keep a read per collect).
     */
    private final Map<String, java.util.Set<Long>> byExecution = new HashMap<>();
    /**
     * SQL executions ended lately: a stage can complete after its execution ended (adaptive
     * execution cancels the stages left once a limit is reached), and its read must not stay.
     */
    private final java.util.Set<String> ended = java.util.Collections.newSetFromMap(
        new LinkedHashMap<String, Boolean>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                return size() > ENDED_KEPT;
            }
        });
    /** Bytes counted for the run's scans (part of its measured input). */
    long counted;
    /** A SQL event could not be read: no stage counts scans from then on. */
    boolean off;
    /**
     * Files the scans of the stage last passed to {@link #stageCompleted} selected, summed;
     * null where one of them did not tell (or the stage ran none).
     */
    Long stageFiles;

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ScanInput.class);

    /** Turn the scan rule off for the rest of the run, said once in the driver's log. */
    void turnOff(Throwable t) {
        if (off) return;
        off = true;
        LOG.warn("sparkpredict: cannot read a SQL scan's size of files ({}); from now on this run's input "
            + "is its tasks' input metric, which Parquet's vectored reads leave at the footers", t.toString());
    }

    /**
     * Run a step of the scan rule: its result, or false once the rule is off. A step that fails
     * turns the rule off (said once) and returns false, never the recording off: what it throws
     * is the rule's own trouble, a RuntimeException on an event not foreseen or a LinkageError
     * (NoClassDefFoundError, NoSuchMethodError) from a Spark SQL class missing or changed in
     * another Spark; a step reads its event before it counts anything. The JVM's own errors
     * (VirtualMachineError) go on to the listener's callback guard, which stops the recording.
     */
    boolean guard(java.util.function.BooleanSupplier step) {
        if (off) return false;
        try {
            return step.getAsBoolean();
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable t) {
            turnOff(t);
            return false;
        }
    }

    /**
     * Whether a stage's call site (its details) is a DataFrameReader's: the first line is the
     * Spark method the application called, a reader's when it ran the job to read a schema (a
     * CSV header's first line, `inferSchema`, JSON's inference, Parquet's `mergeSchema`:
     * `org.apache.spark.sql.classic.DataFrameReader.csv(...)`), a Dataset's or SQLExecution's
     * for an action. Such a stage reads no input of the run's, which reads the files again (a
     * one-partition CSV read with a header counted twice its size, with `inferSchema` three
     * times). As eventlog_scans.is_reader_probe tells it.
     */
    static boolean isReaderProbe(String details) {
        if (details == null) return false;
        String first = details.split("\n", 2)[0].trim();
        return first.startsWith("org.apache.spark.sql.DataFrameReader.")
            || first.startsWith("org.apache.spark.sql.classic.DataFrameReader.");
    }

    /** Register the scans of a SQL execution's plan (its start or an adaptive update). */
    void plan(SparkPlanInfo root) {
        Deque<SparkPlanInfo> todo = new ArrayDeque<>();
        Deque<Integer> fragmentOf = new ArrayDeque<>();
        Map<Integer, java.util.Set<Long>> fragments = new HashMap<>();
        int lastFragment = 0;
        if (root != null) {
            todo.push(root);
            fragmentOf.push(0);
        }
        while (!todo.isEmpty()) {
            SparkPlanInfo node = todo.pop();
            int fragment = fragmentOf.pop();
            boolean boundary = false;
            String name = node.nodeName();
            if (name != null) {
                for (String b : STAGE_BOUNDARIES) boundary |= name.contains(b);
            }
            for (SparkPlanInfo child : CollectionConverters.asJava(node.children())) {
                if (child == null) continue;
                todo.push(child);
                fragmentOf.push(boundary ? ++lastFragment : fragment);
            }
            Long sizeId = null;
            Long numId = null;
            Long photonNumId = null;
            List<Long> taskIds = new ArrayList<>();
            for (SQLMetricInfo m : CollectionConverters.asJava(node.metrics())) {
                if (sizeId == null && FILES_SIZE.equals(m.name())) sizeId = m.accumulatorId();
                else {
                    if (numId == null && FILES_NUM.equals(m.name())) numId = m.accumulatorId();
                    if (photonNumId == null && FILES_NUM_PHOTON.equals(m.name())) photonNumId = m.accumulatorId();
                    taskIds.add(m.accumulatorId());
                }
            }
            if (sizeId != null) {
                register(sizeId, numId != null ? numId : photonNumId, taskIds);
                fragments.computeIfAbsent(fragment, k -> new TreeSet<>()).add(sizeId);
            }
        }
        // a scan shown in several fragments (under a reused exchange too) has all their scans
        Map<Long, java.util.Set<Long>> siblings = new HashMap<>();
        for (java.util.Set<Long> ids : fragments.values()) {
            for (long sizeId : ids) {
                java.util.Set<Long> others = siblings.computeIfAbsent(sizeId, k -> new TreeSet<>());
                for (long other : ids) {
                    if (other != sizeId) others.add(other);
                }
            }
        }
        for (Map.Entry<Long, java.util.Set<Long>> e : siblings.entrySet()) {
            Scan scan = scans.get(e.getKey());
            if (scan == null) continue;
            long[] ids = new long[e.getValue().size()];
            int i = 0;
            for (long other : e.getValue()) ids[i++] = other;
            scan.siblings = ids;
        }
    }

    private void register(long sizeId, Long numId, List<Long> taskIds) {
        Scan scan = scans.remove(sizeId);
        if (scan == null) {
            long[] ids = new long[taskIds.size()];
            for (int i = 0; i < ids.length; i++) ids[i] = taskIds.get(i);
            scan = new Scan(ids, numId);
            for (long i : ids) scanOf.put(i, sizeId);
            if (numId != null) numOf.put(numId, sizeId);
        }
        scans.put(sizeId, scan);  // re-inserted: the most recently planned
    }

    /** Forget the reads of a SQL execution that ended. */
    void executionEnded(long executionId) {
        String execution = String.valueOf(executionId);
        ended.add(execution);
        forget(execution);
    }

    /** SQL executions whose reads are held (a diagnostic). */
    int executions() {
        return byExecution.size();
    }

    private void forget(String execution) {
        java.util.Set<Long> ids = byExecution.remove(execution);
        if (ids == null) return;
        for (long sizeId : ids) {
            Scan scan = scans.get(sizeId);
            if (scan == null) continue;
            scan.reads.remove(execution);
            scan.counted.remove(execution);
        }
    }

    /** Take the files' size and number of the scans among a driver's accumulator updates. */
    void driverUpdates(scala.collection.Seq<scala.Tuple2<Object, Object>> updates) {
        for (scala.Tuple2<Object, Object> u : CollectionConverters.asJava(updates)) {
            Long id = whole(u._1());
            Long value = whole(u._2());
            if (id == null || value == null) continue;
            Scan scan = scans.get(id);
            if (scan != null) scan.filesBytes = Math.max(0L, value);
            Long sizeId = numOf.get(id);
            Scan counted = sizeId == null ? null : scans.get(sizeId);
            if (counted != null) counted.numFiles = Math.max(0L, value);
        }
    }

    /**
     * Count the known scans the stage ran, with the partitions its successful tasks ran
     * ({@code ran}); false when it ran none (its task metric is then its input).
     * {@code execution}: the stage's SQL execution id; {@code persisted}: its RDDs include a
     * persisted one; {@code probe}: a DataFrameReader ran it ({@link #isReaderProbe}). Reads
     * all of the event before counting (run it under {@link #guard}).
     */
    boolean stageCompleted(StageInfo s, Integer rddId, int partitions, BitSet ran, String execution,
                           boolean persisted, boolean probe) {
        stageFiles = null;
        if (off || scanOf.isEmpty()) return false;
        TreeSet<Long> here = new TreeSet<>();
        for (AccumulableInfo a : CollectionConverters.asJava(s.accumulables()).values()) {
            Long sizeId = scanOf.get(a.id());
            Scan scan = sizeId == null ? null : scans.get(sizeId);
            if (scan == null || scan.filesBytes == null) continue;
            // Spark lists no metric a stage left at zero: a stage over a cached copy of the
            // scan's output lists none of its metrics (nor, alas, a scan that output no row)
            Long v = a.value().isDefined() ? whole(a.value().get()) : null;
            if (v != null && v != 0L) here.add(sizeId);
        }
        // A scan that output no row lists no metric, but ran where the scans of its stage
        // fragment did, when all the stage's partitions ran (a limit over a union may run the
        // partitions of one of its scans only)
        boolean whole = partitions > 0 && ran.get(0, partitions).cardinality() >= partitions;
        for (long sizeId : whole ? new ArrayList<>(here) : new ArrayList<Long>()) {
            for (long other : scans.get(sizeId).siblings) {
                Scan sibling = scans.get(other);
                if (sibling != null && sibling.filesBytes != null) here.add(other);
            }
        }
        // The same plan run again (`df.collect()` twice) reads its files again: each SQL
        // execution is a read of its own. Over a persisted RDD the executions share one.
        String read = persisted ? null : execution;
        int rdd = rddId != null ? rddId : -1;
        if (read != null && !here.isEmpty()) byExecution.computeIfAbsent(read, k -> new java.util.HashSet<>()).addAll(here);
        // a reader's schema probe: its scans ran, but read no input of the run's
        for (long sizeId : probe ? new TreeSet<Long>() : here) {
            Scan scan = scans.get(sizeId);
            Map<Integer, Object[]> byRdd = scan.reads.computeIfAbsent(read, k -> new HashMap<>());
            Object[] state = byRdd.get(rdd);
            if (state == null) {
                state = new Object[] {partitions, partitions > 0 ? new BitSet(partitions) : null};
                byRdd.put(rdd, state);
            }
            int n = (Integer) state[0];
            BitSet seen = (BitSet) state[1];
            if (seen != null) {
                seen.or(ran.get(0, n));
                if (seen.cardinality() >= n) state[1] = null;  // all ran: nothing left to tell apart
            }
            long files = scan.filesBytes;
            long now = 0;
            for (Object[] st : byRdd.values()) {
                now = Math.max(now, st[1] == null ? files : countedBytes(files, ((BitSet) st[1]).cardinality(), (Integer) st[0]));
            }
            long before = scan.counted.getOrDefault(read, 0L);
            if (now > before) {
                counted += now - before;
                scan.counted.put(read, now);
            }
        }
        // The files its scans selected, whatever share of their partitions ran: FilePartition
        // packed the stage's tasks from all of them.
        stageFiles = filesOf(here);
        // counted as it was; what it read is then forgotten, as its execution's end forgot the rest
        if (read != null && ended.contains(read)) forget(read);
        return !here.isEmpty();
    }

    /** The files the scans {@code here} selected, summed; null where one did not tell. */
    private Long filesOf(java.util.Set<Long> here) {
        Long files = here.isEmpty() ? null : 0L;
        for (long sizeId : here) {
            Long n = scans.get(sizeId).numFiles;
            files = files == null || n == null ? null : files + n;
        }
        return files;
    }

    /** The share of {@code filesBytes} that {@code ran} of {@code partitions} partitions read. */
    static long countedBytes(long filesBytes, int ran, int partitions) {
        if (partitions <= 0 || ran >= partitions) return filesBytes;
        return (long) ((double) filesBytes * ran / partitions);
    }

    /** An accumulator value as Spark gives it (a Long live, a String replayed from a log), or null. */
    private static Long whole(Object v) {
        if (v instanceof Long || v instanceof Integer) return ((Number) v).longValue();
        if (v instanceof String) {
            try {
                return Long.parseLong(((String) v).trim());
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return null;
    }
}
