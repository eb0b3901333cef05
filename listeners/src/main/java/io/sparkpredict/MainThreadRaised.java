package io.sparkpredict;

/**
 * Tells the listener when a JVM application's {@code main} ends with an exception: an
 * exception out of {@code main} after its last job (a failed validation, a write that threw)
 * ends the JVM with status 1, and Spark's shutdown hook then stops the context as for a good
 * end, so the run was recorded succeeded, of a shorter runtime, and trained the models as a
 * whole run. Only {@code sparkpredict submit} corrected it, by spark-submit's exit code; a
 * cluster's listener settings ({@code listener conf}) record JVM applications without submit.
 * The Python driver's equivalent is sparkpredict.attach's exit handler, which calls
 * {@link SparkPredictListener#driverRaised} through py4j.
 *
 * <p>One default handler per JVM, however many listeners it builds. It sees only what no
 * thread's own handler took, and passes everything on: to the default handler it replaced,
 * else it prints the stack trace as the JVM does without one, so the output is unchanged.
 * Only the thread named {@code main} counts (spark-submit's client mode runs the
 * application's {@code main} there): another thread's death is not the application's end.
 * Not seen: {@code System.exit(n)}, whose status a shutdown hook cannot read, and the cluster
 * deploy mode, whose ApplicationMaster runs {@code main} on a thread of its own and catches
 * what it throws.
 */
final class MainThreadRaised {
    /** At most this many characters of the exception's text are kept (as the Python side keeps). */
    static final int RAISED_CHARS = 500;
    private static boolean installed;

    private MainThreadRaised() {}

    static synchronized void install() {
        if (installed) return;
        installed = true;
        try {
            final Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
            Thread.setDefaultUncaughtExceptionHandler((thread, raised) -> {
                try {
                    if ("main".equals(thread.getName())) SparkPredictListener.driverRaised("failed", text(raised));
                } catch (Throwable ignored) {
                    // never in the way of the exception's own handling
                }
                if (before != null) {
                    before.uncaughtException(thread, raised);
                } else {
                    // what ThreadGroup.uncaughtException prints when no default handler is set
                    System.err.print("Exception in thread \"" + thread.getName() + "\" ");
                    raised.printStackTrace(System.err);
                }
            });
        } catch (Throwable t) {
            // a security manager that refuses: a JVM application's exception goes unseen, as before
        }
    }

    /** "the driver raised java.lang.IllegalStateException: ...", as the Python side words it. */
    static String text(Throwable raised) {
        String s = "the driver raised " + raised;
        return s.length() > RAISED_CHARS ? s.substring(0, RAISED_CHARS - 3) + "..." : s;
    }
}
