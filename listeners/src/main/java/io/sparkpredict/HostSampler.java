package io.sparkpredict;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Host-wide counters from Linux /proc, read by {@link HostMetricsPlugin} on every executor's
 * host (and the driver's). Interference from a neighbour shows on the host before it shows in
 * Spark's task metrics: a co-located process doing network I/O burns softirq time, one writing
 * to disk fills the I/O pressure stall counters. The monitor compares these counters, over each
 * stage's window, with the same stage in clean runs.
 *
 * Every value is a cumulative counter since boot except mem_available_bytes and procs_running.
 * A file that cannot be read (not Linux, no PSI in the kernel) leaves its fields null: sampling
 * never throws.
 */
final class HostSampler {
    /** Columns of the host_samples table after (run_id, executor_id, host, time_ms), in order. */
    static final String[] FIELDS = {
        "cpu_count", "cpu_user_ms", "cpu_nice_ms", "cpu_system_ms", "cpu_idle_ms", "cpu_iowait_ms",
        "cpu_irq_ms", "cpu_softirq_ms", "cpu_steal_ms", "procs_running", "context_switches",
        "psi_cpu_some_us", "psi_memory_some_us", "psi_memory_full_us", "psi_io_some_us", "psi_io_full_us",
        "disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes", "mem_available_bytes",
        "major_page_faults",
    };
    private static final int CPU0 = 1; // cpu_user_ms: 8 jiffy fields follow cpu_count
    /** USER_HZ: 100 on every Linux architecture Spark runs on. */
    private static final long MS_PER_JIFFY = 10;
    private static final Path PROC = Paths.get("/proc");

    /** One reading of one host, sent from executors to the driver. */
    static final class Sample implements Serializable {
        private static final long serialVersionUID = 1L;
        final String executorId;
        final String host;
        final long timeMs;
        final Long[] values;

        Sample(String executorId, String host, long timeMs, Long[] values) {
            this.executorId = executorId;
            this.host = host;
            this.timeMs = timeMs;
            this.values = values;
        }
    }

    private static int idx(String name) {
        for (int i = 0; i < FIELDS.length; i++) if (FIELDS[i].equals(name)) return i;
        throw new IllegalArgumentException(name);
    }

    private static final int PROCS_RUNNING = idx("procs_running"), CTXT = idx("context_switches"),
        PSI_CPU = idx("psi_cpu_some_us"), PSI_MEM = idx("psi_memory_some_us"), PSI_IO = idx("psi_io_some_us"),
        DISK_READ = idx("disk_read_bytes"), NET_RX = idx("net_rx_bytes"), MEM_AVAIL = idx("mem_available_bytes"),
        MAJFLT = idx("major_page_faults");

    private final Set<String> disks;

    HostSampler() {
        disks = wholeDisks();
    }

    /** A reading now, or null when /proc says nothing (not Linux) or says it unexpectedly. */
    Sample read(String executorId, String host) {
        try {
            return readOrThrow(executorId, host);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private Sample readOrThrow(String executorId, String host) {
        Long[] v = new Long[FIELDS.length];
        boolean any = false;
        any |= stat(v);
        any |= psi("cpu", v, PSI_CPU, -1);
        any |= psi("memory", v, PSI_MEM, PSI_MEM + 1);
        any |= psi("io", v, PSI_IO, PSI_IO + 1);
        any |= diskstats(v);
        any |= netdev(v);
        any |= meminfo(v);
        any |= vmstat(v);
        return any ? new Sample(executorId, host, System.currentTimeMillis(), v) : null;
    }

    private static List<String> lines(String... path) {
        try {
            return Files.readAllLines(PROC.resolve(String.join("/", path)), StandardCharsets.US_ASCII);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static boolean stat(Long[] v) {
        List<String> ls = lines("stat");
        if (ls == null) return false;
        long cpus = 0;
        for (String l : ls) {
            // /proc/stat's "intr" line holds thousands of numbers: split only the lines we read
            if (!(l.startsWith("cpu") || l.startsWith("procs_running") || l.startsWith("ctxt"))) continue;
            String[] f = l.trim().split("\\s+");
            if (f[0].equals("cpu")) {
                for (int i = 0; i < 8 && i + 1 < f.length; i++) v[CPU0 + i] = Long.parseLong(f[i + 1]) * MS_PER_JIFFY;
            } else if (f[0].startsWith("cpu")) {
                cpus++;
            } else if (f[0].equals("procs_running") && f.length > 1) {
                v[PROCS_RUNNING] = Long.parseLong(f[1]);
            } else if (f[0].equals("ctxt") && f.length > 1) {
                v[CTXT] = Long.parseLong(f[1]);
            }
        }
        if (cpus > 0) v[0] = cpus;
        return true;
    }

    /** Pressure stall totals (us): "some" into {@code some}, "full" into {@code full} (-1: skip). */
    private static boolean psi(String resource, Long[] v, int some, int full) {
        List<String> ls = lines("pressure", resource);
        if (ls == null) return false;
        for (String l : ls) {
            int at = l.indexOf("total=");
            if (at < 0) continue;
            long total = Long.parseLong(l.substring(at + 6).trim());
            if (l.startsWith("some")) v[some] = total;
            else if (l.startsWith("full") && full >= 0) v[full] = total;
        }
        return true;
    }

    /** Block devices that are whole disks: partitions and device-mapper volumes would count twice. */
    private static Set<String> wholeDisks() {
        Set<String> out = new HashSet<>();
        try (java.util.stream.Stream<Path> s = Files.list(Paths.get("/sys/block"))) {
            s.forEach(p -> {
                String n = p.getFileName().toString();
                if (!n.startsWith("loop") && !n.startsWith("ram") && !n.startsWith("zram")
                    && !n.startsWith("dm-") && !n.startsWith("md") && !n.startsWith("sr")) out.add(n);
            });
        } catch (IOException | RuntimeException e) {
            // no sysfs: no disk counters
        }
        return out;
    }

    private boolean diskstats(Long[] v) {
        List<String> ls = lines("diskstats");
        if (ls == null || disks.isEmpty()) return false;
        long read = 0, written = 0;
        for (String l : ls) {
            String[] f = l.trim().split("\\s+");
            if (f.length < 10 || !disks.contains(f[2])) continue;
            read += Long.parseLong(f[5]) * 512;    // sectors are 512 bytes in diskstats, whatever the device
            written += Long.parseLong(f[9]) * 512;
        }
        v[DISK_READ] = read;
        v[DISK_READ + 1] = written;
        return true;
    }

    private static boolean netdev(Long[] v) {
        List<String> ls = lines("net", "dev");
        if (ls == null) return false;
        long rx = 0, tx = 0;
        for (String l : ls) {
            int colon = l.indexOf(':');
            if (colon < 0) continue;
            String[] f = l.substring(colon + 1).trim().split("\\s+");
            if (f.length < 9) continue;
            rx += Long.parseLong(f[0]);
            tx += Long.parseLong(f[8]);
        }
        v[NET_RX] = rx;
        v[NET_RX + 1] = tx;
        return true;
    }

    private static boolean meminfo(Long[] v) {
        List<String> ls = lines("meminfo");
        if (ls == null) return false;
        for (String l : ls) {
            if (l.startsWith("MemAvailable:")) {
                v[MEM_AVAIL] = Long.parseLong(l.substring(13).trim().split("\\s+")[0]) * 1024;
            }
        }
        return true;
    }

    private static boolean vmstat(Long[] v) {
        List<String> ls = lines("vmstat");
        if (ls == null) return false;
        for (String l : ls) {
            if (l.startsWith("pgmajfault ")) v[MAJFLT] = Long.parseLong(l.substring(11).trim());
        }
        return true;
    }
}
