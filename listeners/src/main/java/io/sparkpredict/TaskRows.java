package io.sparkpredict;

import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.TaskInfo;

/** A task end's metric values and its tasks row: built from the event alone, no state kept. */
final class TaskRows {
    private TaskRows() {}

    /** Where {@link #metricValues} puts the metrics the run's totals and input read again. */
    static final int RUN_TIME = metricAt("executor_run_time_ms"), INPUT_BYTES = metricAt("input_bytes"),
        SHUFFLE_READ = metricAt("shuffle_read_bytes"), SHUFFLE_WRITE = metricAt("shuffle_write_bytes");

    private static int metricAt(String name) {
        for (int i = 0; i < Tables.N_METRICS; i++) {
            if (Tables.METRICS[i][0].equals(name)) return i;
        }
        throw new IllegalArgumentException("no task metric " + name);
    }

    /** The long metric at {@code i} of {@link #metricValues}; 0 without metrics. */
    static long longAt(Object[] values, int i) {
        Object v = values[i];
        return v instanceof Long ? (Long) v : 0L;
    }

    /** Metric values in schema order (Long or Double, ns converted to ms); nulls without metrics. */
    static Object[] metricValues(TaskMetrics m) {
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

    /** The tasks row of {@code e}, whose {@link #metricValues} and duration the caller has. */
    static Object[] row(SparkListenerTaskEnd e, Object[] metrics, long durationMs) {
        TaskInfo info = e.taskInfo();
        Row r = new Row(Tables.TASKS);
        r.set("stage_id", e.stageId());
        r.set("stage_attempt_id", e.stageAttemptId());
        r.set("task_id", info.taskId());
        r.set("task_index", info.index());
        r.set("attempt", info.attemptNumber());
        r.set("executor_id", info.executorId());
        r.set("host", info.host());
        r.set("launch_ms", info.launchTime());
        r.set("finish_ms", info.finishTime());
        r.set("duration_ms", durationMs);
        r.set("getting_result_ms", info.gettingResultTime() > 0 && info.finishTime() > 0
            ? info.finishTime() - info.gettingResultTime() : 0L);
        r.set("status", info.status());
        r.set("locality", String.valueOf(info.taskLocality()));
        r.set("speculative", info.speculative());
        System.arraycopy(metrics, 0, r.values, r.metricsAt(), Tables.N_METRICS);
        return r.values;
    }
}
