package io.sparkpredict;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;

/**
 * The store schema, mirrored from sparkpredict/store/schema.py (the one owner of it).
 * tests/test_schema_contract.py compares the files this listener writes with that module,
 * so a column added there and not here (or the reverse) fails the build's tests.
 */
final class Tables {
    static final int SCHEMA_VERSION = 1;
    static final String STORE_FORMAT = "sparkpredict-store";
    static final String MARKER_FILE = "_sparkpredict_store.json";
    static final String COMMIT_TABLE = "runs";

    enum Kind { STRING, LONG, INT, DOUBLE, BOOL }

    /** One table: ordered column names and kinds, and a name -> position index. */
    static final class Table {
        final String name;
        final String[] names;
        final Kind[] kinds;
        final Map<String, Integer> index = new HashMap<>();
        final MessageType parquet;

        Table(String name, Object[][] cols) {
            this.name = name;
            names = new String[cols.length];
            kinds = new Kind[cols.length];
            Types.MessageTypeBuilder b = Types.buildMessage();
            for (int i = 0; i < cols.length; i++) {
                names[i] = (String) cols[i][0];
                kinds[i] = (Kind) cols[i][1];
                index.put(names[i], i);
                switch (kinds[i]) {
                    case STRING: b.optional(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).named(names[i]); break;
                    case LONG: b.optional(PrimitiveTypeName.INT64).named(names[i]); break;
                    case INT: b.optional(PrimitiveTypeName.INT32).named(names[i]); break;
                    case DOUBLE: b.optional(PrimitiveTypeName.DOUBLE).named(names[i]); break;
                    case BOOL: b.optional(PrimitiveTypeName.BOOLEAN).named(names[i]); break;
                    default: throw new IllegalStateException();
                }
            }
            parquet = b.named("sparkpredict_" + name);
        }

        Object[] newRow() { return new Object[names.length]; }

        int col(String n) {
            Integer i = index.get(n);
            if (i == null) throw new IllegalArgumentException("no column " + n + " in table " + name);
            return i;
        }
    }

    private static final Kind S = Kind.STRING, L = Kind.LONG, I = Kind.INT, D = Kind.DOUBLE, B = Kind.BOOL;

    /** Task metrics in schema order; DOUBLE ones are converted from nanoseconds. */
    static final Object[][] METRICS = {
        {"executor_run_time_ms", L}, {"executor_cpu_time_ms", D},
        {"executor_deserialize_time_ms", L}, {"executor_deserialize_cpu_time_ms", D},
        {"jvm_gc_time_ms", L}, {"result_serialization_time_ms", L}, {"result_size_bytes", L},
        {"input_bytes", L}, {"input_records", L}, {"output_bytes", L}, {"output_records", L},
        {"shuffle_remote_read_bytes", L}, {"shuffle_local_read_bytes", L}, {"shuffle_read_bytes", L},
        {"shuffle_fetch_wait_ms", L}, {"shuffle_read_records", L},
        {"shuffle_write_bytes", L}, {"shuffle_write_time_ms", D}, {"shuffle_write_records", L},
        {"memory_spilled_bytes", L}, {"disk_spilled_bytes", L}, {"peak_execution_memory_bytes", L},
    };
    static final int N_METRICS = METRICS.length;

    static final Table RUNS = new Table("runs", new Object[][] {
        {"run_id", S}, {"app_id", S}, {"app_attempt_id", S}, {"app_name", S}, {"job", S},
        {"status", S}, {"error_message", S}, {"spark_version", S}, {"master", S},
        {"start_ms", L}, {"end_ms", L}, {"wall_ms", L}, {"executors_requested", I},
        {"executors_max", I}, {"executors_mean", D}, {"executor_cores", I}, {"executor_memory_mb", L},
        {"task_slots", I}, {"input_bytes", L}, {"input_bytes_source", S}, {"shuffle_read_bytes", L},
        {"shuffle_write_bytes", L}, {"executor_run_time_ms", L}, {"num_jobs", I}, {"num_stages", I},
        {"num_tasks", L}, {"num_failed_tasks", L}, {"properties_json", S}, {"source", S},
        {"source_path", S}, {"source_fingerprint", S}, {"sparkpredict_version", S},
        {"schema_version", I}, {"updated_ms", L},
    });

    static final Table EXECUTORS = new Table("executors", new Object[][] {
        {"run_id", S}, {"executor_id", S}, {"host", S}, {"cores", I}, {"memory_mb", L},
        {"added_ms", L}, {"removed_ms", L}, {"removed_reason", S},
    });

    static final Table STAGES = new Table("stages", concat(new Object[][] {
        {"run_id", S}, {"job_id", I}, {"stage_id", I}, {"stage_attempt_id", I}, {"name", S},
        {"num_tasks", I}, {"parent_stage_ids_json", S}, {"rdd_names_json", S}, {"submission_ms", L},
        {"completion_ms", L}, {"duration_ms", L}, {"status", S}, {"failure_reason", S},
        {"num_task_rows", I}, {"num_failed_tasks", I},
    }, METRICS, new Object[][] {
        {"task_duration_min_ms", D}, {"task_duration_median_ms", D}, {"task_duration_p90_ms", D},
        {"task_duration_max_ms", D},
    }));

    static final Table TASKS = new Table("tasks", concat(new Object[][] {
        {"run_id", S}, {"stage_id", I}, {"stage_attempt_id", I}, {"task_id", L}, {"task_index", I},
        {"attempt", I}, {"executor_id", S}, {"host", S}, {"launch_ms", L}, {"finish_ms", L},
        {"duration_ms", L}, {"getting_result_ms", L}, {"status", S}, {"locality", S},
        {"speculative", B},
    }, METRICS, new Object[][] {}));

    static final Table HOST_SAMPLES = new Table("host_samples", new Object[][] {
        {"run_id", S}, {"executor_id", S}, {"host", S}, {"time_ms", L}, {"cpu_count", I},
        {"cpu_user_ms", L}, {"cpu_nice_ms", L}, {"cpu_system_ms", L}, {"cpu_idle_ms", L},
        {"cpu_iowait_ms", L}, {"cpu_irq_ms", L}, {"cpu_softirq_ms", L}, {"cpu_steal_ms", L},
        {"procs_running", I}, {"context_switches", L}, {"psi_cpu_some_us", L},
        {"psi_memory_some_us", L}, {"psi_memory_full_us", L}, {"psi_io_some_us", L},
        {"psi_io_full_us", L}, {"disk_read_bytes", L}, {"disk_write_bytes", L}, {"net_rx_bytes", L},
        {"net_tx_bytes", L}, {"mem_available_bytes", L}, {"major_page_faults", L},
    });

    static final Table STAGE_SCANS = new Table("stage_scans", new Object[][] {
        {"run_id", S}, {"stage_id", I}, {"stage_attempt_id", I}, {"scan_files", L},
    });

    /** The input a run's stages read, declared size or not: only in the batch of its final run row. */
    static final Table RUN_INPUTS = new Table("run_inputs", new Object[][] {
        {"run_id", S}, {"measured_input_bytes", L}, {"updated_ms", L},
    });

    /** Written in this order; runs last (the batch's commit mark). */
    static final List<Table> ALL = Arrays.asList(EXECUTORS, STAGES, TASKS, HOST_SAMPLES, STAGE_SCANS, RUN_INPUTS, RUNS);

    static final Map<String, Table> BY_NAME = new LinkedHashMap<>();
    static {
        for (Table t : ALL) BY_NAME.put(t.name, t);
    }

    private static Object[][] concat(Object[][]... parts) {
        List<Object[]> out = new ArrayList<>();
        for (Object[][] p : parts) out.addAll(Arrays.asList(p));
        return out.toArray(new Object[0][]);
    }

    private Tables() {}
}
