package io.sparkpredict;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Remembers SIGTERM, SIGHUP (a closed terminal, which signals its whole process group) and SIGINT
 * (Ctrl-C), so that the application end they cause is recorded as killed. One handler per signal and JVM, however many listeners it builds; each chains to the
 * handler it replaced, so Spark's and the JVM's own handling go on as before.
 */
final class TermSignal {
    // Logged under the listener's name, which log4j settings that quiet or raise it name.
    private static final Logger LOG = LoggerFactory.getLogger(SparkPredictListener.class);
    private static volatile String received;
    private static boolean installed;

    private TermSignal() {}

    /** The signal ("TERM", "HUP" or "INT") ending the JVM since {@link #install()}; null when none. */
    static String received() { return received; }

    static synchronized void install() {
        if (installed) return;
        installed = true;
        watch("TERM", true);
        watch("HUP", true);
        // A JVM that a Python driver launched ignores SIGINT (pyspark's launcher does, so that
        // Ctrl-C reaches Python's KeyboardInterrupt only): the JVM then installs no handler, and
        // this one is never called.
        watch("INT", false);
    }

    /**
     * {@code sticky}: once received, the signal stays the cause of the end. SIGINT is not: a
     * handler it chains to that returns (spark-shell's, which cancels the running jobs and lets
     * the shell go on) handled it without ending the JVM; the JVM's own one never returns.
     */
    private static void watch(String name, boolean sticky) {
        try {
            final sun.misc.Signal sig = new sun.misc.Signal(name);
            final sun.misc.SignalHandler[] prev = new sun.misc.SignalHandler[1];
            sun.misc.SignalHandler before = sun.misc.Signal.handle(sig, s -> {
                received = name;
                sun.misc.SignalHandler p = prev[0];
                if (p == sun.misc.SignalHandler.SIG_DFL) System.exit(128 + s.getNumber());
                else if (p != null && p != sun.misc.SignalHandler.SIG_IGN) {
                    try {
                        p.handle(s);
                    } catch (UnsupportedOperationException native_) {
                        // a JNI library's handler, which Java cannot call: end as the signal's
                        // default action does, rather than let the signal end nothing
                        System.exit(128 + s.getNumber());
                    }
                }
                if (!sticky && name.equals(received)) received = null;
            });
            if (before == sun.misc.SignalHandler.SIG_IGN && name.equals("HUP")) {
                // nohup: the driver outlives the terminal, so a hang-up ends nothing to record
                sun.misc.Signal.handle(sig, before);
                return;
            }
            prev[0] = before;
        } catch (Throwable t) {
            LOG.debug("sparkpredict: cannot watch SIG{} ({}); a driver it ends is recorded by its running jobs "
                + "and at exit only", name, t.toString());
        }
    }
}
