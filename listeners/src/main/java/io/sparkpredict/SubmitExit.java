package io.sparkpredict;

import java.util.Map;

/**
 * Whether spark-submit is ending the JVM because the Python or R driver it ran failed.
 *
 * <p>spark-submit runs a Python script as a child process (PythonRunner; R alike). When the
 * script exits with a non-zero status (it raised, or called {@code sys.exit(1)}) PythonRunner
 * throws SparkUserAppException, which SparkSubmit's {@code main} catches and turns into
 * {@code System.exit(status)}. The context the script left running then stops from Spark's
 * shutdown hook as for a good end, and the run was recorded succeeded, of a shorter runtime,
 * and trained the models as a whole run: every Python job submitted with a cluster's listener
 * settings and no {@code sparkpredict.attach} (which tells the listener itself).
 *
 * <p>The status is not readable from a shutdown hook, but the JVM's main thread then waits in
 * {@code System.exit}, called (through CommandLineLoggingUtils' exitFn) from the
 * {@code doSubmit} of the SparkSubmit that {@code SparkSubmit.main} builds: the one place it
 * exits after the application ran, and only for SparkUserAppException, whose status is never
 * 0. A good end leaves no main thread (it returned), and {@code System.exit} anywhere else
 * (a JVM application's own, the pyspark gateway's at a Python driver's exit) has another
 * caller. Read once, at the application's end, while the shutdown hooks run.
 */
final class SubmitExit {
    private SubmitExit() {}

    /** What the run's message says when {@link #failedApplication()} is true. */
    static final String MESSAGE = "the driver exited with a non-zero status (spark-submit's Python or R "
        + "application failed: see its output)";

    /** Whether the JVM is exiting because spark-submit's Python or R application failed. */
    static boolean failedApplication() {
        try {
            for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                if ("main".equals(e.getKey().getName()) && exitsForSubmit(e.getValue())) return true;
            }
        } catch (Throwable t) {
            // a security manager that refuses: not knowing records the run as before
        }
        return false;
    }

    /** Whether {@code stack} (innermost first) is in System.exit called from SparkSubmit's doSubmit. */
    static boolean exitsForSubmit(StackTraceElement[] stack) {
        int i = 0;
        while (i < stack.length && !isExit(stack[i])) i++;
        if (i == stack.length) return false;
        // System.exit calls Runtime.exit: past both, the exit function's own frames (a Scala
        // lambda and its adapters), then its caller
        while (i + 1 < stack.length && isExit(stack[i + 1])) i++;
        for (i++; i < stack.length; i++) {
            String cls = stack[i].getClassName();
            if (cls.startsWith("org.apache.spark.util.CommandLineLoggingUtils") || cls.startsWith("scala.")) continue;
            return cls.startsWith("org.apache.spark.deploy.SparkSubmit$$anon$")
                && "doSubmit".equals(stack[i].getMethodName());
        }
        return false;
    }

    private static boolean isExit(StackTraceElement f) {
        return "exit".equals(f.getMethodName())
            && ("java.lang.System".equals(f.getClassName()) || "java.lang.Runtime".equals(f.getClassName()));
    }
}
