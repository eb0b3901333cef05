package io.sparkpredict;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.SparkConf;
import org.apache.spark.resource.ExecutorResourceRequest;
import org.apache.spark.resource.ResourceProfile;
import org.apache.spark.resource.TaskResourceRequest;
import org.apache.spark.scheduler.JobFailed;
import org.apache.spark.scheduler.JobResult;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerApplicationStart;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerResourceProfileAdded;

/**
 * The run being recorded: the application's identity and outcome, its totals over jobs and
 * tasks, and its executors, with the runs and executors rows built from them (the stage totals
 * come from its {@link StageTracker}).
 *
 * <p>Not thread-safe: the listener calls it holding its own lock.
 */
final class RunRecord {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern LOCAL_CLUSTER = Pattern.compile("local-cluster\\[\\s*(\\d+)\\s*,.*");

    private static final class Exec {
        String id, host, reason;
        int cores, resourceProfileId;
        long added;
        Long removed;
        boolean written;
        /** Its start is in {@link #executorsAlive} and {@link #slotsAlive}. */
        boolean counted;
    }

    /**
     * The highest running sum of {@code {time_ms, change}} events, as {@link #peak} over all of
     * them, holding only the events of the last {@link #SLACK_MS}: older ones are summed into
     * the running sum and the peak so far. An application that runs for weeks under dynamic
     * allocation adds and removes tens of thousands of executors; sorting them all at every
     * job end grew without bound on Spark's listener thread.
     */
    static final class Timeline {
        /**
         * Spark posts an executor's added and removed events in the order of their times
         * (CoarseGrainedSchedulerBackend's one endpoint thread); a minute's margin keeps the
         * fold exact when a thread posts an event stamped a little before one it follows.
         */
        static final long SLACK_MS = 60_000;
        private List<long[]> recent = new ArrayList<>();
        private long running, peak;
        private long newest = Long.MIN_VALUE;
        /** Events before it are folded into running and peak. */
        private long folded = Long.MIN_VALUE;

        void add(long time, long change) {
            if (time < folded) {
                // Later than the slack allows (never seen): counted at the fold's end, not in
                // its place, which can only misplace it within the peak.
                running += change;
                peak = Math.max(peak, running);
            } else {
                recent.add(new long[] {time, change});
            }
            newest = Math.max(newest, time);
        }

        /** Fold the events older than the newest one by more than the slack. */
        void fold() {
            if (newest == Long.MIN_VALUE || newest - SLACK_MS <= folded) return;
            long cut = newest - SLACK_MS;
            sort(recent);
            List<long[]> keep = new ArrayList<>();
            for (long[] ev : recent) {
                if (ev[0] < cut) {
                    running += ev[1];
                    peak = Math.max(peak, running);
                } else {
                    keep.add(ev);
                }
            }
            recent = keep;
            folded = cut;
        }

        /** The peak of the events added and {@code more}, whose times are not before the fold. */
        long peak(List<long[]> more) {
            List<long[]> events = new ArrayList<>(recent);
            events.addAll(more);
            sort(events);
            long r = running, p = peak;
            for (long[] ev : events) {
                r += ev[1];
                p = Math.max(p, r);
            }
            return p;
        }

        int held() { return recent.size(); }
    }

    private final SparkConf conf;
    private final BuildStamp stamp;
    private final StageTracker stages;
    /**
     * Executors alive, or removed and their row not handed to the writer yet; the others are
     * only in the running figures below, which the run row reads as it read them all.
     */
    private final Map<String, Exec> executors = new LinkedHashMap<>();
    /** Executors at once: +1 at each start, -1 at each removal (executors_max). */
    private final Timeline executorsAlive = new Timeline();
    /**
     * Task slots at once, as {@link #taskSlots} counts them, from each executor's start within
     * the run; holds the removals of the executors forgotten, not those of the live ones,
     * which end at the row's end.
     */
    private final Timeline slotsAlive = new Timeline();
    /** Milliseconds alive within the run, summed over the executors forgotten. */
    private long forgottenAliveMs;
    private int maxCores;
    /** An executor of a resource profile other than the default was ever added. */
    private boolean ownProfile;
    /** Spark posted the application's start: startMs, which bounds each executor's time, is final. */
    private boolean startHeard;
    /** Executor memory (MiB) that each non-default resource profile asks for, by profile id. */
    private final Map<Integer, Long> profileMemoryMb = new HashMap<>();
    /** spark.task.cpus of each resource profile, by id: executors of several profiles differ in slots. */
    private final Map<Integer, Integer> profileTaskCpus = new HashMap<>();

    private String appId;
    private String attemptId;
    private String appName;
    private long startMs;
    private Long endMs;
    private boolean lastJobFailed;
    /** Jobs started and not ended: at the application's end, jobs it cut short. */
    private final TreeSet<Integer> runningJobs = new TreeSet<>();
    private String errorMessage;
    /** A succeeded run's message is the note of the events missed (its figures may fall short). */
    private boolean succeededWithNote;
    /** Events the listener's own callbacks failed on, which it then lost (see SparkPredictListener#lost). */
    private int lostEvents;
    /** The first of them: "onTaskEnd, a java.lang.NullPointerException". */
    private String firstLost;
    private int numJobs;
    private long numTasks;
    private long numFailedTasks;
    private long shuffleRead;
    private long shuffleWrite;
    private long runTime;

    RunRecord(SparkConf conf, BuildStamp stamp, StageTracker stages) {
        this.conf = conf;
        this.stamp = stamp;
        this.stages = stages;
    }

    /** The identity the conf gives, until Spark posts the application's start; throws on a bad start time. */
    void readConf() {
        appName = conf.get("spark.app.name", null);
        appId = conf.get("spark.app.id", null);
        startMs = conf.getLong("spark.app.startTime", System.currentTimeMillis());
    }

    long startMs() { return startMs; }

    String runId() {
        return appId != null ? runId(appId, attemptId, startMs)
            : runId("unknown-app-" + startMs, attemptId, startMs);
    }

    /** Spark's standalone master numbers its applications from 0000 on every master (local-cluster, each Databricks job cluster). */
    private static final Pattern PER_MASTER_APP_ID = Pattern.compile("app-[0-9]{14}-[0-9]{4,}");

    /**
     * The store's key of a run, by sparkpredict.store.schema.run_id's rule: an id numbered per
     * master is shared by two clusters' applications started in the same second, so it gets the
     * driver's start time, which the event log's SparkListenerApplicationStart carries too.
     */
    static String runId(String appId, String attemptId, long startMs) {
        String id = PER_MASTER_APP_ID.matcher(appId).matches() ? appId + "@" + startMs : appId;
        return attemptId != null ? id + "/" + attemptId : id;
    }

    // ---- events ----------------------------------------------------------------------------

    void applicationStarted(SparkListenerApplicationStart e) {
        appName = e.appName();
        if (e.appId().isDefined()) appId = e.appId().get();
        attemptId = e.appAttemptId().isDefined() ? e.appAttemptId().get() : null;
        startMs = e.time();
        startHeard = true;
    }

    void executorAdded(SparkListenerExecutorAdded e) {
        Exec x = new Exec();
        x.id = e.executorId();
        x.host = e.executorInfo().executorHost();
        x.cores = e.executorInfo().totalCores();
        x.resourceProfileId = e.executorInfo().resourceProfileId();
        x.added = e.time();
        executors.put(x.id, x);
        maxCores = Math.max(maxCores, x.cores);
        ownProfile |= x.resourceProfileId != ResourceProfile.DEFAULT_RESOURCE_PROFILE_ID();
    }

    void resourceProfileAdded(SparkListenerResourceProfileAdded e) {
        ResourceProfile p = e.resourceProfile();
        ExecutorResourceRequest memory = p.executorResourcesJMap().get(ResourceProfile.MEMORY());
        // The default profile's memory stays the configuration's (in local mode the driver's).
        if (p.id() != ResourceProfile.DEFAULT_RESOURCE_PROFILE_ID() && memory != null && memory.amount() > 0) {
            profileMemoryMb.put(p.id(), memory.amount());
        }
        TaskResourceRequest cpus = p.taskResourcesJMap().get(ResourceProfile.CPUS());
        if (cpus != null && cpus.amount() >= 1) profileTaskCpus.put(p.id(), (int) cpus.amount());
    }

    void executorRemoved(SparkListenerExecutorRemoved e) {
        Exec x = executors.get(e.executorId());
        if (x != null && x.removed == null) {
            x.removed = e.time();
            x.reason = e.reason();
        }
    }

    void jobStarted(int jobId, java.util.Properties props) {
        numJobs++;
        runningJobs.add(jobId);
        if (props != null && props.getProperty(STREAMING_QUERY_ID) != null) streamingJobs.add(jobId);
    }

    /** Local property Structured Streaming sets on each micro-batch's jobs. */
    static final String STREAMING_QUERY_ID = "sql.streaming.queryId";
    /** Running jobs of a streaming query's micro-batches. */
    private final java.util.Set<Integer> streamingJobs = new java.util.HashSet<>();

    /** query.stop() cancels the micro-batch running then: "[SPARK_JOB_CANCELLED] Job 26 cancelled Query ... was stopped". */
    static boolean cancelled(int jobId, String message) {
        return message != null && message.contains("Job " + jobId + " cancelled");
    }

    /**
     * Job {@code jobId} ended with {@code result}, read from the event by the caller. All of it
     * (the failure's message too) is read before the job is counted ended: one that threw after
     * took the job off the running ones, and a run whose job end was lost read as succeeded.
     */
    void jobEnded(int jobId, JobResult result) {
        boolean failed = result instanceof JobFailed;
        Exception failure = failed ? ((JobFailed) result).exception() : null;
        String message = failure == null ? null : failure.getMessage();
        runningJobs.remove(jobId);
        boolean streaming = streamingJobs.remove(jobId);
        if (failed && streaming && failure != null && cancelled(jobId, message)) {
            // a stopped streaming query: its last micro-batch was cut short on purpose
            lastJobFailed = false;
            errorMessage = null;
        } else if (failed) {
            lastJobFailed = true;
            errorMessage = failure == null ? "job " + jobId + " failed" : String.valueOf(message);
        } else {
            lastJobFailed = false;
            // a failure later jobs recovered from is not why a run that ends killed ended
            errorMessage = null;
        }
    }

    /**
     * A callback of the listener failed on an event ({@code where}, what it threw): the event
     * is lost, as one Spark drops is. Returns how many the run has lost.
     */
    int eventLost(String where, Throwable t) {
        if (lostEvents++ == 0) firstLost = where + ", a " + t.getClass().getName();
        return lostEvents;
    }

    /**
     * The listener stops recording the run before its end ({@code why}): the run is recorded
     * up to now, incomplete. Returns that status.
     */
    String stoppedRecording(String why) {
        errorMessage = why;
        return "incomplete";
    }

    /**
     * A shuffle map task whose output was lost with its executor: Spark posts a second end for
     * the attempt that already ended (same TaskInfo, still SUCCESS, no metrics). The attempt
     * has its row; like Spark's UI (AppStatusListener) the stage and the run count this end as
     * a failed task. The event-log reader does the same.
     */
    void taskResubmitted() {
        numFailedTasks++;
    }

    /**
     * A task end, its metrics as {@link TaskRows#metricValues} read them: the event is not read
     * again, since a getter that threw here, after the task was counted, left the run counting
     * a task that neither its stage nor the task rows have.
     */
    void taskEnded(boolean ok, Object[] metrics) {
        numTasks++;
        if (!ok) numFailedTasks++;
        shuffleRead += TaskRows.longAt(metrics, TaskRows.SHUFFLE_READ);
        shuffleWrite += TaskRows.longAt(metrics, TaskRows.SHUFFLE_WRITE);
        runTime += TaskRows.longAt(metrics, TaskRows.RUN_TIME);
    }

    /**
     * The run's final status at the application's end, its error message set to match.
     * {@code signal}: the signal ending the driver ("TERM", "INT"), or null. Spark posts the
     * application's end before it cancels the jobs still running (their ends come after it, and
     * are not this run's), so a job started and not ended here was cut short: the run is
     * killed (Ctrl-C under spark-submit, a context stopped mid-job), never succeeded. The
     * event-log ingest decides the same way (eventlog_run.run_status). {@code raised}: the Python
     * driver's uncaught exception, {status, message}, or null: an event log does not hold it.
     *
     * <p>{@code dropped}: events Spark's bus dropped from this listener's queue {@code queue}
     * (full: a listener too slow, or a burst of events). Then a job not heard to end may have
     * ended, its end among them, and the run's figures may lack what they carried (task ends,
     * stage completions): with no signal, exception or exit code to tell how it ended, a run with
     * such a job is {@code incomplete}, the store's status for a run recorded in part, which
     * training leaves out and the slowdown monitor's baselines keep, neither killed nor
     * succeeded; failed when the last job heard of failed; succeeded when every job was heard to
     * end. Every status then says, in its message, how many were dropped. Events the listener
     * itself failed on ({@link #eventLost}) count the same way, told apart in the message.
     */
    String applicationEnded(SparkListenerApplicationEnd e, String signal, String[] raised, long dropped, String queue) {
        endMs = e.time();
        int exit = e.exitCode().isDefined() ? (Integer) e.exitCode().get() : 0;
        // a streaming query's micro-batch cut short by the end is how such an application stops
        TreeSet<Integer> cut = new TreeSet<>(runningJobs);
        cut.removeAll(streamingJobs);
        String note = missedNote(dropped, queue);
        if (note != null && !cut.isEmpty()) note += "; " + notHeardToEnd(cut);
        String running = note != null ? note : cut.isEmpty() ? null : stillRunning(cut);
        String status;
        if (signal != null) {
            status = "killed";
            String why = "driver received SIG" + signal;
            if (running != null) errorMessage = why + "; " + running;
            else if (errorMessage == null) errorMessage = why;
        } else if (raised != null) {
            // before the exit code, which says only that something failed
            status = raised[0];
            errorMessage = running != null ? raised[1] + "; " + running : raised[1];
        } else if (exit != 0) {
            status = "failed";
            if (running != null) errorMessage = "application exit code " + exit + "; " + running;
            else if (errorMessage == null) errorMessage = "application exit code " + exit;
        } else if (note != null) {
            // Every job heard to end ran to its end: succeeded, its wall time true and only the
            // figures of dropped task ends short, which the note says. Marked incomplete, a busy
            // driver, where Spark drops events every run, had no run left to learn from.
            status = lastJobFailed ? "failed" : cut.isEmpty() ? "succeeded" : "incomplete";
            errorMessage = lastJobFailed && errorMessage != null ? errorMessage + "; " + note : note;
            succeededWithNote = "succeeded".equals(status);
        } else if (running != null) {
            status = "killed";
            errorMessage = running;
        } else if (lastJobFailed) {
            status = "failed";
        } else {
            status = "succeeded";
            errorMessage = null;
        }
        return status;
    }

    /**
     * Why the run's figures may fall short, or null: the events Spark dropped from the
     * listener's queue ({@link #droppedNote}), those the listener itself failed on, or both.
     */
    private String missedNote(long dropped, String queue) {
        if (lostEvents == 0) return dropped > 0 ? droppedNote(dropped, queue) : null;
        String lost = lostNote(lostEvents, firstLost);
        return (dropped > 0 ? sparkDropped(dropped, queue) + ", and " : "") + lost + MAY_FALL_SHORT;
    }

    private static final String MAY_FALL_SHORT = ", so this run's figures may be incomplete";

    /**
     * "the sparkpredict listener itself failed on 2 events (the first in onTaskEnd, a
     * java.lang.NullPointerException: see the driver's log) and recorded them in part or not at
     * all": its own errors, which no setting of Spark's would have avoided.
     */
    static String lostNote(int lost, String first) {
        return "the sparkpredict listener itself failed on " + lost + (lost == 1 ? " event" : " events")
            + " (" + (lost == 1 ? "in " : "the first in ") + first + ": see the driver's log) and recorded "
            + (lost == 1 ? "it" : "them") + " in part or not at all";
    }

    /** "Spark dropped 7 events of this listener's queue (shared) ...": why a run's figures may fall short. */
    static String droppedNote(long dropped, String queue) {
        return sparkDropped(dropped, queue) + MAY_FALL_SHORT;
    }

    private static String sparkDropped(long dropped, String queue) {
        return "Spark dropped " + dropped + (dropped == 1 ? " event" : " events") + " of the listener's queue ("
            + (queue != null ? queue : "shared") + ", full: see spark.scheduler.listenerbus.eventqueue.capacity)";
    }

    /** Shown for at most this many jobs still running at the end; the rest are counted. */
    private static final int JOBS_LISTED = 10;

    /** "2 jobs were still running at the application's end (jobs 3, 4)", as Python's eventlog_run writes it. */
    static String stillRunning(java.util.Collection<Integer> jobs) {
        return jobsWere(jobs) + " still running at the application's end (" + jobIds(jobs) + "): the run was interrupted";
    }

    /** "2 jobs were never heard to end (jobs 3, 4)": with events dropped, not known to be cut short. */
    static String notHeardToEnd(java.util.Collection<Integer> jobs) {
        return jobsWere(jobs) + " never heard to end (" + jobIds(jobs) + ")";
    }

    private static String jobsWere(java.util.Collection<Integer> jobs) {
        return jobs.size() == 1 ? "1 job was" : jobs.size() + " jobs were";
    }

    /** "job 3", "jobs 3, 4", "jobs 1, ..., 10 and 2 more". */
    private static String jobIds(java.util.Collection<Integer> jobs) {
        int n = jobs.size();
        StringBuilder ids = new StringBuilder(n == 1 ? "job " : "jobs ");
        int i = 0;
        for (Integer id : jobs) {
            if (i == JOBS_LISTED) break;
            if (i++ > 0) ids.append(", ");
            ids.append(id);
        }
        if (n > JOBS_LISTED) ids.append(" and ").append(n - JOBS_LISTED).append(" more");
        return ids.toString();
    }

    /**
     * The driver's JVM exits with no application end: the run's status. Killed, or what the
     * Python driver raised; but with events dropped from the listener's queue (see
     * {@link #applicationEnded}) and no signal, the end Spark posted as it stopped may be one of
     * them: incomplete. Events the listener failed on are told in the message, and change no
     * status: the application's end is never one of them.
     */
    String exitedWithoutEnd(String[] raised, String signal, long dropped, String queue) {
        String note = missedNote(dropped, queue);
        if (raised != null) {
            errorMessage = note != null ? raised[1] + "; " + note : raised[1];
            return raised[0];
        }
        // an event the listener failed on is never the application's end (a failure there turns it off)
        if (dropped > 0 && signal == null) {
            errorMessage = "driver JVM exited with no application end heard; " + note;
            return "incomplete";
        }
        if (errorMessage == null) errorMessage = "driver JVM exited without an application end";
        if (note != null) errorMessage += "; " + note;
        return "killed";
    }

    // ---- rows ------------------------------------------------------------------------------

    /**
     * Rows of the executors not handed over yet. Each is handed over once, when final (removed,
     * or alive at the {@code last} snapshot), so the table never holds two rows for one
     * executor; a failed write keeps them for the next.
     */
    List<Object[]> executorRows(boolean last) {
        List<Object[]> out = new ArrayList<>();
        for (Exec x : executors.values()) {
            if (x.written || (x.removed == null && !last)) continue;
            Row r = new Row(Tables.EXECUTORS);
            r.set("executor_id", x.id);
            r.set("host", x.host);
            r.set("cores", x.cores);
            r.set("memory_mb", profileMemoryMb.getOrDefault(x.resourceProfileId, executorMemoryMb()));
            r.set("added_ms", x.added);
            r.set("removed_ms", x.removed);
            r.set("removed_reason", x.reason);
            out.add(r.values);
            x.written = true;
        }
        forgetWritten();
        return out;
    }

    /** Executors kept in memory: alive, or removed and not handed over yet; and timeline events held. */
    int trackedExecutors() {
        return executors.size() + executorsAlive.held() + slotsAlive.held();
    }

    /** Task slots of one executor: its cores over its profile's task cpus (Spark's floor). */
    private long slots(Exec x, int cores, int taskCpus) {
        int perTask = x.resourceProfileId == ResourceProfile.DEFAULT_RESOURCE_PROFILE_ID()
            ? taskCpus : profileTaskCpus.getOrDefault(x.resourceProfileId, taskCpus);
        return (x.cores > 0 ? x.cores : cores) / Math.max(perTask, 1);
    }

    /**
     * Move the executors' starts into the timelines, and forget the executors removed whose
     * row has been handed to the writer, keeping what the run row reads of them. Their
     * removals are taken to precede the row's end, as Spark posts them before the
     * application's end and each snapshot's clock reads after it heard them.
     */
    private void forgetWritten() {
        if (!startHeard) return;  // until then startMs, which bounds every executor's time, may move
        int taskCpus = Math.max(1, conf.getInt("spark.task.cpus", 1));
        java.util.Iterator<Exec> it = executors.values().iterator();
        while (it.hasNext()) {
            Exec x = it.next();
            // an executor of no cores takes the run's, which later executors may change
            if (x.cores <= 0) continue;
            long n = slots(x, 0, taskCpus);
            if (!x.counted) {
                executorsAlive.add(x.added, 1);
                slotsAlive.add(Math.max(x.added, startMs), n);
                x.counted = true;
            }
            if (x.removed == null || !x.written) continue;
            executorsAlive.add(x.removed, -1);
            slotsAlive.add(x.removed, -n);
            long a = Math.max(x.added, startMs);
            if (x.removed > a) forgottenAliveMs += x.removed - a;
            it.remove();
        }
        executorsAlive.fold();
        slotsAlive.fold();
    }

    /**
     * Tasks the run could run at once: {@code max x (cores / task.cpus)}, or, with executors of
     * a resource profile other than the default, the most at once of each live executor's own
     * cores over its profile's task cpus (executors of 4 + 2 + 2 cores, the small two at 2 cpus
     * a task, read 12 slots where they had 6). Times in ms.
     */
    private int taskSlots(int max, int cores, int taskCpus, long end) {
        if (!ownProfile) return max * (cores / taskCpus);
        List<long[]> events = new ArrayList<>();
        for (Exec x : executors.values()) {
            long n = slots(x, cores, taskCpus);
            if (!x.counted) events.add(new long[] {Math.max(x.added, startMs), n});
            events.add(new long[] {Math.min(x.removed != null ? x.removed : end, end), -n});
        }
        return (int) slotsAlive.peak(events);
    }

    /**
     * Timeline order: by time, and at one instant the decreases first (an executor removed as
     * another is added is never counted twice).
     */
    private static void sort(List<long[]> events) {
        events.sort((p, q) -> p[0] != q[0] ? Long.compare(p[0], q[0]) : Long.compare(p[1], q[1]));
    }

    /** The run row as of {@code now}; {@code last}: the final one, with its end time. */
    Object[] runRow(ListenerSettings settings, String status, long now, boolean last) {
        Row r = new Row(Tables.RUNS);
        String master = conf.get("spark.master", null);
        String jobKey = settings.jobKey;
        r.set("app_id", appId);
        r.set("app_attempt_id", attemptId);
        r.set("app_name", appName);
        r.set("job", jobKey != null && !jobKey.isEmpty() ? jobKey : appName);
        r.set("status", status);
        r.set("error_message", "succeeded".equals(status) && !succeededWithNote ? null : errorMessage);
        r.set("spark_version", stamp.sparkVersion);
        r.set("master", master);
        r.set("start_ms", startMs);
        long end = last && endMs != null ? endMs : now;
        r.set("end_ms", last ? endMs : null);
        r.set("wall_ms", end - startMs);
        r.set("executors_requested", executorsRequested(master));
        // executor timeline over [start, end]
        double aliveMs = forgottenAliveMs;
        List<long[]> events = new ArrayList<>();
        for (Exec x : executors.values()) {
            long a = Math.max(x.added, startMs);
            long b = Math.min(x.removed != null ? x.removed : end, end);
            if (b > a) aliveMs += b - a;
            if (!x.counted) events.add(new long[] {x.added, 1});
            if (x.removed != null) events.add(new long[] {x.removed, -1});
        }
        int max = (int) executorsAlive.peak(events);
        r.set("executors_max", max);
        r.set("executors_mean", end > startMs ? aliveMs / (end - startMs) : (double) max);
        Integer cores = conf.contains("spark.executor.cores") && !isLocal(master)
            ? Integer.valueOf(conf.getInt("spark.executor.cores", 1)) : (maxCores > 0 ? Integer.valueOf(maxCores) : null);
        r.set("executor_cores", cores);
        r.set("executor_memory_mb", executorMemoryMb());
        int taskCpus = Math.max(1, conf.getInt("spark.task.cpus", 1));
        // Spark: floor(cores / task.cpus) per executor
        r.set("task_slots", cores != null ? taskSlots(max, cores, taskCpus, end) : null);
        if (settings.declaredInputBytes != null) {
            r.set("input_bytes", settings.declaredInputBytes);
            r.set("input_bytes_source", "declared");
        } else {
            r.set("input_bytes", stages.measuredInput());
            r.set("input_bytes_source", "measured");
        }
        r.set("shuffle_read_bytes", shuffleRead);
        r.set("shuffle_write_bytes", shuffleWrite);
        r.set("executor_run_time_ms", runTime);
        r.set("num_jobs", numJobs);
        r.set("num_stages", stages.numStages);
        r.set("num_tasks", numTasks);
        r.set("num_failed_tasks", numFailedTasks);
        r.set("properties_json", propertiesJson());
        r.set("source", "listener");
        r.set("sparkpredict_version", stamp.writerVersion);
        r.set("schema_version", Tables.SCHEMA_VERSION);
        r.set("updated_ms", now);
        return r.values;
    }

    /**
     * The run_inputs row as of {@code now}: what the stages read, measured as an undeclared run's
     * input_bytes is, whether or not a size was declared (the run row keeps the declared one alone).
     */
    Object[] inputRow(long now) {
        Row r = new Row(Tables.RUN_INPUTS);
        r.set("measured_input_bytes", stages.measuredInput());
        r.set("updated_ms", now);
        return r.values;
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
}
