package io.sparkpredict;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Samples host counters ({@link HostSampler}) on the driver's and every executor's host and
 * hands them to the {@link SparkPredictListener} of the driver, which writes them to the
 * store's host_samples table. Enabled with {@code spark.plugins=io.sparkpredict.HostMetricsPlugin}
 * (sparkpredict's Spark settings add it); {@code spark.sparkpredict.hostSampleIntervalMs}
 * (default 1000, 0 = off) sets the period. A listener-only setup records everything else.
 *
 * Like the listener, it never throws into Spark: a failed reading or send is dropped.
 */
public class HostMetricsPlugin implements SparkPlugin {
    private static final Logger LOG = LoggerFactory.getLogger(HostMetricsPlugin.class);
    static final String INTERVAL_KEY = "spark.sparkpredict.hostSampleIntervalMs";
    /** Told to executors (through the driver's init reply) when nothing on the driver would record. */
    private static final String OFF_KEY = "sparkpredict.hostSampling.off";
    /**
     * Samples kept for the listener at most (a sample from an executor holds 669 bytes of heap,
     * measured: 67 MB); older ones are dropped. The listener takes them at every flush, and
     * flushes early once flushEveryTasks of them wait, so a healthy one never comes near.
     */
    static final int MAX_PENDING = 100_000;

    private static final ConcurrentLinkedQueue<HostSampler.Sample> PENDING = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger SIZE = new AtomicInteger();
    private static final AtomicLong DROPPED = new AtomicLong();
    /**
     * Whether a listener of this driver will take the samples: false when spark.extraListeners
     * lacks it, or once it stopped recording (a foreign store, a jar built for another Spark).
     * Nobody would drain the queue then: it held MAX_PENDING samples for the rest of the run.
     */
    private static volatile boolean wanted = true;

    /** Samples waiting for the listener (also a diagnostic for tests). */
    public static int pendingSamples() { return Math.max(0, SIZE.get()); }

    /** Called by the listener when it stops recording: drop what waits, queue nothing more. */
    static void listenerStopped() {
        wanted = false;
        drain();
    }

    /** Driver side: queue a sample for the listener's next flush. */
    static void offer(HostSampler.Sample s) {
        if (s == null) return;
        if (!wanted) {
            DROPPED.incrementAndGet();
            return;
        }
        PENDING.add(s);
        if (SIZE.incrementAndGet() > MAX_PENDING && PENDING.poll() != null) {
            SIZE.decrementAndGet();
            DROPPED.incrementAndGet();
        }
    }

    /** Driver side: every queued sample, oldest first; the queue is left empty. */
    static List<HostSampler.Sample> drain() {
        List<HostSampler.Sample> out = new ArrayList<>();
        HostSampler.Sample s;
        while ((s = PENDING.poll()) != null) {
            SIZE.decrementAndGet();
            out.add(s);
        }
        return out;
    }

    static long dropped() { return DROPPED.get(); }

    private static final AtomicLong READ_NS = new AtomicLong();
    private static final AtomicLong READ_CPU_NS = new AtomicLong();
    private static final AtomicLong READS = new AtomicLong();
    private static final java.lang.management.ThreadMXBean THREADS =
        java.lang.management.ManagementFactory.getThreadMXBean();

    /** Wall time this JVM spent reading /proc for samples (ns), for benchmarks/host_sampler_cost.py;
     * on a busy host it includes waiting for a core. */
    public static long readNanos() { return READ_NS.get(); }

    /** CPU time of those readings (ns; 0 where the JVM cannot measure thread CPU time). */
    public static long readCpuNanos() { return READ_CPU_NS.get(); }

    /** Readings this JVM took. */
    public static long reads() { return READS.get(); }

    /** The driver's reading, kept for one more at application end; null where the driver does not sample. */
    private static volatile Runnable driverReading;

    /** Driver side, called by the listener at application end: one more reading, so that the run's
     * last stages lie between two samples however short they are. Never throws. */
    static void sampleDriverNow() {
        Runnable read = driverReading;
        if (read == null) return;
        try {
            read.run();
        } catch (Throwable t) {
            LOG.debug("sparkpredict: the last host sample failed: {}", t.toString());
        }
    }

    private static HostSampler.Sample timedRead(HostSampler sampler, String executorId, String host) {
        long t0 = System.nanoTime();
        long c0 = THREADS.getCurrentThreadCpuTime();
        HostSampler.Sample s = sampler.read(executorId, host);
        long c1 = THREADS.getCurrentThreadCpuTime();
        READ_NS.addAndGet(System.nanoTime() - t0);
        if (c0 >= 0 && c1 >= c0) READ_CPU_NS.addAndGet(c1 - c0);
        READS.incrementAndGet();
        return s;
    }

    @Override
    public DriverPlugin driverPlugin() {
        return new DriverPlugin() {
            private Ticker ticker;

            @Override
            public Map<String, String> init(SparkContext sc, PluginContext ctx) {
                try {
                    long every = interval(ctx.conf());
                    driverReading = null;
                    drain();  // an earlier application's, in this JVM
                    String listeners = ctx.conf().get("spark.extraListeners", "");
                    wanted = java.util.Arrays.asList(listeners.trim().split("\\s*,\\s*"))
                        .contains(SparkPredictListener.class.getName());
                    if (!wanted && every > 0) {
                        LOG.warn("sparkpredict: spark.plugins has {} but spark.extraListeners lacks {}: nothing "
                            + "would record host samples, so none are taken", HostMetricsPlugin.class.getName(),
                            SparkPredictListener.class.getName());
                        return Collections.singletonMap(OFF_KEY, "true");
                    }
                    if (every > 0) {
                        HostSampler sampler = new HostSampler();
                        Runnable read = () -> offer(timedRead(sampler, "driver", ctx.hostname()));
                        driverReading = read;
                        ticker = new Ticker("sparkpredict-host-driver", every, read::run);
                    }
                } catch (Throwable t) {
                    LOG.warn("sparkpredict: host sampling on the driver is off: {}", t.toString());
                }
                return Collections.emptyMap();
            }

            @Override
            public Object receive(Object message) {
                if (message instanceof HostSampler.Sample) offer((HostSampler.Sample) message);
                return null;
            }

            @Override
            public void shutdown() {
                if (ticker != null) ticker.stop();
            }
        };
    }

    @Override
    public ExecutorPlugin executorPlugin() {
        return new ExecutorPlugin() {
            private Ticker ticker;

            @Override
            public void init(PluginContext ctx, Map<String, String> extraConf) {
                try {
                    long every = interval(ctx.conf());
                    // In local mode the executor shares the driver's JVM and host: the driver samples it.
                    boolean off = extraConf != null && "true".equals(extraConf.get(OFF_KEY));
                    if (every > 0 && !off && !"driver".equals(ctx.executorID())) {
                        HostSampler sampler = new HostSampler();
                        ticker = new Ticker("sparkpredict-host-executor", every, () -> {
                            HostSampler.Sample s = timedRead(sampler, ctx.executorID(), executorHost());
                            if (s != null) ctx.send(s);
                        });
                    }
                } catch (Throwable t) {
                    LOG.warn("sparkpredict: host sampling on executor {} is off: {}", ctx.executorID(), t.toString());
                }
            }

            @Override
            public void shutdown() {
                if (ticker != null) ticker.stop();
            }
        };
    }

    /** The host name the executor registered with (tasks' host); PluginContext.hostname() has
     * none on executors, whose RPC environment only connects out. */
    private static String executorHost() {
        try {
            return org.apache.spark.SparkEnv.get().blockManager().blockManagerId().host();
        } catch (RuntimeException e) {
            try {
                return java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.io.IOException | RuntimeException e2) {
                return null;
            }
        }
    }

    private static long interval(SparkConf conf) {
        return ListenerSettings.millis(conf, INTERVAL_KEY, 1000L);
    }

    /** A daemon thread running {@code body} every {@code everyMs}; failures are counted, not thrown. */
    private static final class Ticker implements Runnable {
        interface Body { void run() throws Exception; }

        private final long everyMs;
        private final Body body;
        private final Thread thread;
        private volatile boolean stopped;
        private int failures;

        Ticker(String name, long everyMs, Body body) {
            this.everyMs = everyMs;
            this.body = body;
            thread = new Thread(this, name);
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void run() {
            long next = System.currentTimeMillis();
            while (!stopped) {
                try {
                    body.run();
                } catch (Throwable t) {
                    if (failures++ == 0) LOG.warn("sparkpredict: a host sample failed (later ones are not logged): {}", t.toString());
                }
                next += everyMs;
                long sleep = next - System.currentTimeMillis();
                if (sleep <= 0) {
                    // Late (a GC pause, a loaded host): the next reading one interval from now.
                    // Reading again at once gave two samples of one millisecond, a rate over 0 ms.
                    next = System.currentTimeMillis() + everyMs;
                    sleep = everyMs;
                }
                try {
                    Thread.sleep(sleep);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        void stop() {
            stopped = true;
            thread.interrupt();
        }
    }
}
