package faultinjection;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.spark.TaskState;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.JobResult;
import org.apache.spark.scheduler.JobSucceeded$;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskLocality;
import org.apache.spark.scheduler.cluster.ExecutorInfo;
import org.apache.spark.storage.RDDInfo;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark listener events whose parts fail when the sparkpredict listener reads them, for
 * tests/test_listener_faults_injected.py: a getter named by a {@link Fault} throws once the
 * listener (or one of its classes) has read it {@code after} times. Only reads from the listener's own code fail, so
 * Spark's listeners (its UI's AppStatusListener) see an ordinary event: an OutOfMemoryError
 * thrown at one of them would stop the SparkContext.
 */
public final class Faults {
    private Faults() {}

    /** What a getter throws, and after how many good reads by the listener. */
    public static final class Fault {
        private final String getter;
        private final String kind;
        private final int after;
        /** Only reads with a class whose name starts with this on the stack fail (and count). */
        private final String reader;
        private final AtomicInteger reads = new AtomicInteger();
        private final AtomicInteger fired = new AtomicInteger();

        Fault(String getter, String kind, int after, String reader) {
            this.getter = getter;
            this.kind = kind;
            this.after = after;
            this.reader = reader;
        }

        /** How many times it threw. */
        public int fired() { return fired.get(); }

        /** How many times the listener read its getter. */
        public int reads() { return reads.get(); }

        void check(String name) {
            if (!name.equals(getter) || !readBy(reader)) return;
            if (reads.getAndIncrement() < after) return;
            fired.incrementAndGet();
            String msg = "injected fault in " + name;
            switch (kind) {
                case "runtime": throw new IllegalStateException(msg);
                case "oom": throw new OutOfMemoryError(msg);
                case "stackoverflow": throw new StackOverflowError(msg);
                case "linkage": throw new NoClassDefFoundError(msg);
                default: throw new IllegalArgumentException("no fault kind " + kind);
            }
        }
    }

    /**
     * A fault of {@code getter} ("none" for none): {@code kind} runtime, oom, stackoverflow or
     * linkage (a NoClassDefFoundError, as a Spark class missing in another Spark throws).
     */
    public static Fault fault(String getter, String kind, int after) {
        return new Fault(getter, kind, after, "io.sparkpredict.");
    }

    /** {@link #fault} failing only in reads by the listener's class {@code reader} (e.g. "io.sparkpredict.ScanInput"). */
    public static Fault faultIn(String getter, String kind, int after, String reader) {
        return new Fault(getter, kind, after, reader);
    }

    private static final Fault NONE = fault("none", "runtime", 0);

    private static boolean readBy(String reader) {
        for (StackTraceElement f : Thread.currentThread().getStackTrace()) {
            if (f.getClassName().startsWith(reader)) return true;
        }
        return false;
    }

    @SuppressWarnings("unchecked")
    private static <T> Seq<T> seq(List<T> items) {
        return (Seq<T>) (Object) CollectionConverters.asScala(items).toList();
    }

    // ---- task ends ----------------------------------------------------------------------------

    static final class FaultyTaskInfo extends TaskInfo {
        private final Fault f;

        FaultyTaskInfo(long taskId, int index, long launchMs, Fault f) {
            super(taskId, index, 0, index, launchMs, "driver", "localhost", TaskLocality.PROCESS_LOCAL(), false);
            this.f = f;
        }

        @Override public long taskId() { f.check("taskId"); return super.taskId(); }
        @Override public int index() { f.check("index"); return super.index(); }
        @Override public int attemptNumber() { f.check("attemptNumber"); return super.attemptNumber(); }
        @Override public int partitionId() { f.check("partitionId"); return super.partitionId(); }
        @Override public long launchTime() { f.check("launchTime"); return super.launchTime(); }
        @Override public String executorId() { f.check("executorId"); return super.executorId(); }
        @Override public String host() { f.check("host"); return super.host(); }
        @Override public scala.Enumeration.Value taskLocality() { f.check("taskLocality"); return super.taskLocality(); }
        @Override public boolean speculative() { f.check("speculative"); return super.speculative(); }
        @Override public long gettingResultTime() { f.check("gettingResultTime"); return super.gettingResultTime(); }
        @Override public long finishTime() { f.check("finishTime"); return super.finishTime(); }
        @Override public boolean successful() { f.check("successful"); return super.successful(); }
        @Override public String status() { f.check("status"); return super.status(); }
        @Override public long duration() { f.check("duration"); return super.duration(); }
        @Override public Seq<AccumulableInfo> accumulables() { f.check("accumulables"); return super.accumulables(); }
    }

    static final class FaultyTaskMetrics extends TaskMetrics {
        private final Fault f;

        FaultyTaskMetrics(Fault f) { this.f = f; }

        @Override public long executorRunTime() { f.check("executorRunTime"); return super.executorRunTime(); }
        @Override public long executorCpuTime() { f.check("executorCpuTime"); return super.executorCpuTime(); }
        @Override public long resultSize() { f.check("resultSize"); return super.resultSize(); }
        @Override public long peakExecutionMemory() { f.check("peakExecutionMemory"); return super.peakExecutionMemory(); }
        @Override public org.apache.spark.executor.InputMetrics inputMetrics() {
            f.check("inputMetrics");
            return super.inputMetrics();
        }
        @Override public org.apache.spark.executor.ShuffleReadMetrics shuffleReadMetrics() {
            f.check("shuffleReadMetrics");
            return super.shuffleReadMetrics();
        }
        @Override public org.apache.spark.executor.ShuffleWriteMetrics shuffleWriteMetrics() {
            f.check("shuffleWriteMetrics");
            return super.shuffleWriteMetrics();
        }
    }

    /**
     * A succeeded ResultTask's end in stage {@code stageId} attempt 0: its TaskInfo fails by
     * {@code info}, its metrics (executor run time {@code runMs}, result size {@code resultBytes})
     * by {@code metrics}.
     */
    public static SparkListenerTaskEnd taskEnd(int stageId, long taskId, int index, long runMs, long resultBytes,
                                               Fault info, Fault metrics) {
        long now = System.currentTimeMillis();
        FaultyTaskInfo ti = new FaultyTaskInfo(taskId, index, now - runMs - 5, info == null ? NONE : info);
        ti.markFinished(TaskState.FINISHED(), now);
        FaultyTaskMetrics m = new FaultyTaskMetrics(metrics == null ? NONE : metrics);
        m.setExecutorRunTime(runMs);
        m.setResultSize(resultBytes);
        return new SparkListenerTaskEnd(stageId, 0, "ResultTask", org.apache.spark.Success$.MODULE$, ti, null, m);
    }

    // ---- stages and jobs ----------------------------------------------------------------------

    static final class FaultyStageInfo extends StageInfo {
        private final Fault f;

        @SuppressWarnings("unchecked")
        FaultyStageInfo(int stageId, int numTasks, Fault f) {
            super(stageId, 0, "injected stage " + stageId, numTasks, seq(new ArrayList<RDDInfo>()),
                seq(new ArrayList<Object>()), "", null, seq(new ArrayList<Seq<org.apache.spark.scheduler.TaskLocation>>()),
                Option.empty(), 0, false, 0);
            this.f = f;
        }

        @Override public int stageId() { f.check("stageId"); return super.stageId(); }
        @Override public int attemptNumber() { f.check("attemptNumber"); return super.attemptNumber(); }
        @Override public String name() { f.check("name"); return super.name(); }
        @Override public int numTasks() { f.check("numTasks"); return super.numTasks(); }
        @Override public Seq<RDDInfo> rddInfos() { f.check("rddInfos"); return super.rddInfos(); }
        @Override public Seq<Object> parentIds() { f.check("parentIds"); return super.parentIds(); }
        @Override public Option<Object> submissionTime() { f.check("submissionTime"); return super.submissionTime(); }
        @Override public Option<Object> completionTime() { f.check("completionTime"); return super.completionTime(); }
        @Override public Option<String> failureReason() { f.check("failureReason"); return super.failureReason(); }
        @Override public scala.collection.mutable.HashMap<Object, AccumulableInfo> accumulables() {
            f.check("accumulables");
            return super.accumulables();
        }
    }

    /** StageInfo of a stage of {@code numTasks} tasks, submitted 50 ms ago; completed when {@code completed}. */
    public static StageInfo stage(int stageId, int numTasks, boolean completed, Fault f) {
        FaultyStageInfo s = new FaultyStageInfo(stageId, numTasks, f == null ? NONE : f);
        long now = System.currentTimeMillis();
        s.submissionTime_$eq(Option.apply((Object) (now - 50)));
        if (completed) s.completionTime_$eq(Option.apply((Object) now));
        return s;
    }

    public static SparkListenerStageSubmitted stageSubmitted(StageInfo s) {
        return new SparkListenerStageSubmitted(s, new Properties());
    }

    public static SparkListenerStageCompleted stageCompleted(StageInfo s) {
        return new SparkListenerStageCompleted(s);
    }

    /** A job's start, with its stages (py4j passes a Python list as a java.util.List). */
    public static SparkListenerJobStart jobStart(int jobId, List<StageInfo> stages) {
        return new SparkListenerJobStart(jobId, System.currentTimeMillis(), seq(new ArrayList<>(stages)),
            new Properties());
    }

    static final class FaultyJobEnd extends SparkListenerJobEnd {
        private final Fault f;

        FaultyJobEnd(int jobId, Fault f) {
            super(jobId, System.currentTimeMillis(), JobSucceeded$.MODULE$);
            this.f = f;
        }

        @Override public int jobId() { f.check("jobId"); return super.jobId(); }
        @Override public long time() { f.check("time"); return super.time(); }
        @Override public JobResult jobResult() { f.check("jobResult"); return super.jobResult(); }
    }

    /** A succeeded job's end. */
    public static SparkListenerJobEnd jobEnd(int jobId, Fault f) {
        return new FaultyJobEnd(jobId, f == null ? NONE : f);
    }

    // ---- executors ----------------------------------------------------------------------------

    static final class FaultyExecutorInfo extends ExecutorInfo {
        private final Fault f;

        @SuppressWarnings("unchecked")
        FaultyExecutorInfo(String host, int cores, Fault f) {
            super(host, cores, (scala.collection.immutable.Map<String, String>) (Object) scala.collection.immutable.Map$.MODULE$.empty());
            this.f = f;
        }

        @Override public String executorHost() { f.check("executorHost"); return super.executorHost(); }
        @Override public int totalCores() { f.check("totalCores"); return super.totalCores(); }
        @Override public int resourceProfileId() { f.check("resourceProfileId"); return super.resourceProfileId(); }
    }

    public static SparkListenerExecutorAdded executorAdded(String id, int cores, Fault f) {
        return new SparkListenerExecutorAdded(System.currentTimeMillis(), id,
            new FaultyExecutorInfo("injected-host", cores, f == null ? NONE : f));
    }

    // ---- SQL events (the scan rule, ScanInput) --------------------------------------------------

    static final class FaultyPlanInfo extends org.apache.spark.sql.execution.SparkPlanInfo {
        private final Fault f;

        @SuppressWarnings("unchecked")
        FaultyPlanInfo(Fault f) {
            super("Scan parquet", "Scan parquet injected", seq(new ArrayList<org.apache.spark.sql.execution.SparkPlanInfo>()),
                (scala.collection.immutable.Map<String, String>) (Object) scala.collection.immutable.Map$.MODULE$.empty(),
                seq(new ArrayList<>(List.of(
                    new org.apache.spark.sql.execution.metric.SQLMetricInfo("size of files read", 990001L, "size"),
                    new org.apache.spark.sql.execution.metric.SQLMetricInfo("number of output rows", 990002L, "sum")))));
            this.f = f;
        }

        @Override public Seq<org.apache.spark.sql.execution.SparkPlanInfo> children() {
            f.check("children");
            return super.children();
        }
        @Override public Seq<org.apache.spark.sql.execution.metric.SQLMetricInfo> metrics() {
            f.check("metrics");
            return super.metrics();
        }
    }

    /** A SQL execution's start whose plan (one file scan) fails by {@code f} when read. */
    public static org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart sqlExecutionStart(long id, Fault f) {
        return new org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart(id, Option.empty(),
            "injected", "injected", "injected", new FaultyPlanInfo(f == null ? NONE : f), System.currentTimeMillis(),
            org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart.apply$default$8(),
            org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart.apply$default$9(),
            org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart.apply$default$10(),
            org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart.apply$default$11());
    }

    public static org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd sqlExecutionEnd(long id) {
        return new org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd(id, System.currentTimeMillis(),
            Option.empty(), Option.empty());
    }

    static final class FaultyAccumUpdates extends org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates {
        private final Fault f;

        @SuppressWarnings("unchecked")
        FaultyAccumUpdates(long id, Fault f) {
            super(id, seq(new ArrayList<scala.Tuple2<Object, Object>>(List.of(new scala.Tuple2<Object, Object>(990001L, 4096L)))));
            this.f = f;
        }

        @Override public Seq<scala.Tuple2<Object, Object>> accumUpdates() {
            f.check("accumUpdates");
            return super.accumUpdates();
        }
    }

    /** The driver's metric updates of SQL execution {@code id} (the injected scan's size of files), failing by {@code f}. */
    public static org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates driverAccumUpdates(long id, Fault f) {
        return new FaultyAccumUpdates(id, f == null ? NONE : f);
    }

    // ---- a listener beside sparkpredict's, on the same queue -----------------------------------

    /**
     * Counts the job ends it hears. Added with SparkContext.addSparkListener, it is on the shared
     * queue, as spark.extraListeners are: it hears the jobs after a fault only if that queue's
     * thread lives on.
     */
    public static final class JobEnds extends SparkListener {
        private final AtomicInteger ends = new AtomicInteger();

        @Override public void onJobEnd(SparkListenerJobEnd e) { ends.incrementAndGet(); }

        public int count() { return ends.get(); }
    }
}
