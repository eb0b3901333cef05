package io.sparkpredict;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Remembers SIGTERM, so that the application end it causes is recorded as killed. One handler
 * per JVM, however many listeners it builds; it chains to the handler it replaced.
 */
final class TermSignal {
    // Logged under the listener's name, which log4j settings that quiet or raise it name.
    private static final Logger LOG = LoggerFactory.getLogger(SparkPredictListener.class);
    private static volatile boolean received;
    private static boolean installed;

    private TermSignal() {}

    /** The JVM got SIGTERM since {@link #install()}. */
    static boolean received() { return received; }

    static synchronized void install() {
        if (installed) return;
        installed = true;
        try {
            final sun.misc.Signal term = new sun.misc.Signal("TERM");
            final sun.misc.SignalHandler[] prev = new sun.misc.SignalHandler[1];
            prev[0] = sun.misc.Signal.handle(term, sig -> {
                received = true;
                sun.misc.SignalHandler p = prev[0];
                if (p == sun.misc.SignalHandler.SIG_DFL) System.exit(128 + 15);
                else if (p != null && p != sun.misc.SignalHandler.SIG_IGN) p.handle(sig);
            });
        } catch (Throwable t) {
            LOG.debug("sparkpredict: cannot watch SIGTERM ({}); a terminated driver is recorded at exit only", t.toString());
        }
    }
}
