package io.sparkpredict;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * What this jar was built as (the build.properties Python's build writes into it) and the Spark
 * it runs on: a jar compiled against another Spark minor version records nothing. Every field
 * is "unknown" where it cannot be read; the stamp is informative only, so reading it never throws.
 */
final class BuildStamp {
    /** The sparkpredict version that built the jar, recorded in every run row. */
    final String writerVersion;
    final String builtForSpark;
    /** The Spark this JVM runs. */
    final String sparkVersion;

    private BuildStamp(String writerVersion, String builtForSpark, String sparkVersion) {
        this.writerVersion = writerVersion;
        this.builtForSpark = builtForSpark;
        this.sparkVersion = sparkVersion;
    }

    static BuildStamp read() {
        Properties build = new Properties();
        try (InputStream in = BuildStamp.class.getResourceAsStream("build.properties")) {
            if (in != null) build.load(in);
        } catch (IOException | RuntimeException e) {
            // the stamp is informative only
        }
        return new BuildStamp(build.getProperty("sparkpredict_version", "unknown"),
            build.getProperty("spark_version", "unknown"), runtimeSparkVersion());
    }

    /** Built for the Spark minor version it runs on (or either version is unknown). */
    boolean fitsRuntime() {
        return sameMinor(builtForSpark, sparkVersion);
    }

    private static String runtimeSparkVersion() {
        try {
            Class<?> pkg = Class.forName("org.apache.spark.package$");
            Object module = pkg.getField("MODULE$").get(null);
            return String.valueOf(pkg.getMethod("SPARK_VERSION").invoke(module));
        } catch (Throwable t) {
            return "unknown";
        }
    }

    static boolean sameMinor(String a, String b) {
        if ("unknown".equals(a) || "unknown".equals(b)) return true;
        String[] x = a.split("\\."), y = b.split("\\.");
        return x.length >= 2 && y.length >= 2 && x[0].equals(y[0]) && x[1].equals(y[1]);
    }
}
