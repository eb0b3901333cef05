package io.sparkpredict;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopOutputFile;

/**
 * Writes batches into a sparkpredict store through the Hadoop FileSystem API, following the
 * protocol of sparkpredict/store/schema.py: every file is written under a hidden name and
 * renamed; the batch's runs file is renamed last and commits the batch.
 */
final class StoreWriter {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(StoreWriter.class);
    /** The folder holds things sparkpredict did not write: never write there. */
    static final class ForeignStoreException extends IOException {
        ForeignStoreException(String m) { super(m); }
    }

    /** Batch ids carry at most this many characters of their label (Python's rule too). */
    static final int MAX_LABEL = 60;
    private static final Pattern MARKER_VERSION =
        Pattern.compile("\"schema_version\":(-?[0-9]+)");

    private final String store;
    private final Path root;
    private final Configuration conf;
    private FileSystem fs;
    private boolean initialised;
    private final String writerVersion;

    StoreWriter(String store, Configuration hadoopConf, String writerVersion) {
        this.store = store;
        this.root = new Path(store);
        this.conf = new Configuration(hadoopConf);
        // The local file system would add .crc side files; the raw one writes only ours.
        // Uncached so that this setting never leaks into Spark's own FileSystem instances.
        this.conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
        this.conf.setBoolean("fs.file.impl.disable.cache", true);
        this.writerVersion = writerVersion;
    }

    String store() { return store; }

    private FileSystem fs() throws IOException {
        if (fs == null) fs = root.getFileSystem(conf);
        return fs;
    }

    /**
     * After a failed write: the next one asks Hadoop for the store's FileSystem again. Hadoop
     * hands every user of a scheme one cached instance, which anyone may close: the
     * application's own code ({@code FileSystem.get(conf).close()}, a common slip) or Hadoop's
     * shutdown hook while the last batch waits. A closed one fails every call ("Filesystem
     * closed") and leaves Hadoop's cache, so the one kept here failed every later write of the
     * application, its rows piling up for retries that could never succeed. An instance of a
     * scheme whose cache is off (the local store's) is this writer's own: kept, nobody else
     * closes it, and a new one per failure would never be closed.
     */
    void forgetFileSystem() {
        String scheme = root.toUri().getScheme();
        if (scheme == null) scheme = FileSystem.getDefaultUri(conf).getScheme();
        if (scheme != null && conf.getBoolean("fs." + scheme + ".impl.disable.cache", false)) return;
        fs = null;
    }

    /**
     * Fail now when Hadoop has no FileSystem for the store's scheme (s3a:// without hadoop-aws,
     * a typo): no write could ever succeed, so the listener must not hold rows for one. Loads
     * the implementation's class only; connects to nothing.
     */
    void checkFileSystem() throws IOException {
        String scheme = root.toUri().getScheme();
        if (scheme == null) scheme = FileSystem.getDefaultUri(conf).getScheme();
        if (scheme == null) return;
        try {
            FileSystem.getFileSystemClass(scheme, conf);
        } catch (RuntimeException e) {
            // A scheme Hadoop maps to a class that is not on the classpath (s3a:// without
            // hadoop-aws: core-default.xml names S3AFileSystem) fails as a RuntimeException
            // around the ClassNotFoundException, not as an unknown scheme.
            Throwable c = e;
            while (c != null && !(c instanceof ClassNotFoundException)) c = c.getCause();
            if (c == null) throw e;
            throw new org.apache.hadoop.fs.UnsupportedFileSystemException("no FileSystem on the classpath for "
                + "scheme \"" + scheme + "\" (" + c.getMessage() + ")");
        }
    }

    static String noFileSystemMessage(String store, IOException e) {
        return "sparkpredict: cannot record into store " + store + ": " + e.getMessage()
            + "; nothing is recorded for this application. Fix: put that file system's Hadoop jars on the "
            + "driver's classpath (e.g. hadoop-aws for s3a://), or set spark.sparkpredict.store to a path "
            + "Hadoop can open";
    }

    /** Create the folder and marker if absent; refuse foreign folders and other schema versions. */
    void init() throws IOException {
        if (initialised) return;
        FileSystem f = fs();
        Path marker = new Path(root, Tables.MARKER_FILE);
        if (!f.exists(marker)) {
            String outer = enclosingStore(f);
            if (outer != null) {
                // its files would mix into that store's tables, and that store's `store clean`
                // would remove them (the Python writers refuse such a path too: Store.init)
                throw new ForeignStoreException("store path " + store + " is inside the store " + outer
                    + "; nothing is recorded for this application. Fix: set spark.sparkpredict.store to "
                    + "a folder outside every store");
            }
        }
        if (f.exists(root)) {
            if (!f.getFileStatus(root).isDirectory()) {
                throw new ForeignStoreException("store path " + store + " is a file, not a folder; nothing is "
                    + "recorded for this application. Fix: set spark.sparkpredict.store to a folder (new or "
                    + "a sparkpredict store), or move the file away before the next application");
            }
            if (!f.exists(marker)) {
                List<String> foreign = new ArrayList<>();
                for (FileStatus st : f.listStatus(root)) {
                    String n = st.getPath().getName();
                    // Hidden names are other writers' files in flight (e.g. a marker being created);
                    // the marker, listed here, was made by another writer since exists() above.
                    if (n.startsWith(".") || Tables.BY_NAME.containsKey(n) || n.equals(Tables.MARKER_FILE)) continue;
                    foreign.add(n);
                }
                if (!foreign.isEmpty()) {
                    java.util.Collections.sort(foreign);
                    // the Python readers' words (store.schema.holds_other_files)
                    throw new ForeignStoreException("folder " + store + " is not a sparkpredict store: it holds other files ("
                        + String.join(", ", foreign.subList(0, Math.min(5, foreign.size())))
                        + (foreign.size() > 5 ? ", ..." : "")
                        + "); point spark.sparkpredict.store at an empty or new folder");
                }
            }
        } else {
            f.mkdirs(root);
        }
        if (f.exists(marker) && f.getFileStatus(marker).isDirectory()) {
            throw new ForeignStoreException("store " + store + " is damaged: its marker " + Tables.MARKER_FILE
                + " is a folder; nothing is recorded for this application. Fix: if it holds nothing of "
                + "yours, remove it: the next writer makes the marker again");
        }
        if (!f.exists(marker)) {
            String json = "{\"format\": \"" + Tables.STORE_FORMAT + "\", \"schema_version\": "
                + Tables.SCHEMA_VERSION + "}";
            Path tmp = new Path(root, "." + Tables.MARKER_FILE + "." + shortId() + ".tmp");
            try (OutputStream out = f.create(tmp, true)) {
                out.write(json.getBytes(StandardCharsets.UTF_8));
            }
            // Another writer may have created it meanwhile: theirs is as good as ours.
            if (!f.rename(tmp, marker)) f.delete(tmp, false);
        } else {
            byte[] buf = new byte[4096];
            int n;
            try (InputStream in = f.open(marker)) {
                n = Math.max(0, in.read(buf));
            }
            String text = new String(buf, 0, n, StandardCharsets.UTF_8).replace(" ", "");
            // The whole number: "schema_version":1 is also the start of 10..19.
            Matcher version = MARKER_VERSION.matcher(text);
            if (!text.contains("\"format\":\"" + Tables.STORE_FORMAT + "\"")
                || !version.find() || !version.group(1).equals(Integer.toString(Tables.SCHEMA_VERSION))) {
                throw new ForeignStoreException("store " + store + " has marker " + text.trim()
                    + "; this listener writes schema version " + Tables.SCHEMA_VERSION
                    + ": use a new store folder or a matching sparkpredict");
            }
        }
        initialised = true;
    }

    /** The local store a new local store's folder lies inside, or null; remote file systems
     *  are not walked (as in Python's store.io.enclosing_store). */
    private String enclosingStore(FileSystem f) throws IOException {
        if (!"file".equals(f.getUri().getScheme())) return null;
        for (Path p = root.getParent(); p != null; p = p.getParent()) {
            try {
                if (f.getFileStatus(new Path(p, Tables.MARKER_FILE)).isFile()) return p.toUri().getPath();
            } catch (java.io.FileNotFoundException absent) {
                // no store here: look further up
            }
        }
        return null;
    }

    /** Write one batch; runs (the commit mark) is written and renamed last. */
    void writeBatch(String batchId, Map<Tables.Table, List<Object[]>> rows) throws IOException {
        FileSystem f = fs();
        if (initialised && !f.exists(new Path(root, Tables.MARKER_FILE))) {
            // Removed (or emptied) while the application ran: mkdirs below made its tables again
            // without the marker, which every reader then refused. Checked again as a new store:
            // made afresh, or refused if something else took the path.
            initialised = false;
            LOG.warn("sparkpredict: store {} lost its marker while this application ran (removed or emptied): "
                + "making it again; the rows written to it before are gone with it", store);
        }
        init();
        Map<Path, Path> renames = new java.util.LinkedHashMap<>();
        try {
            for (Tables.Table t : Tables.ALL) {
                List<Object[]> r = rows.get(t);
                if (r == null || (r.isEmpty() && t != Tables.RUNS)) continue;
                Path dir = new Path(root, t.name);
                f.mkdirs(dir);
                Path tmp = new Path(dir, ".part-" + batchId + ".parquet.tmp");
                // Registered before it is written: a write that fails half way (a full disk, a
                // quota) leaves a partial file that the cleanup below must remove too.
                renames.put(tmp, new Path(dir, "part-" + batchId + ".parquet"));
                writeParquet(t, r, tmp);
            }
            for (Map.Entry<Path, Path> e : renames.entrySet()) {
                renamed(f, e.getKey(), e.getValue());
            }
        } catch (Throwable e) {  // an Error too (a codec's native library, memory): no file is left behind
            for (Path tmp : renames.keySet()) {
                try { f.delete(tmp, false); } catch (IOException | RuntimeException ignored) { /* best effort */ }
            }
            throw e;
        }
    }

    /**
     * Rename {@code tmp} to {@code dest}, or throw. A rename that failed, or said it did, after it
     * landed (an object store's copy-then-delete, a connection lost before the answer) counts as
     * done when {@code dest} is there and {@code tmp} gone: batch ids are new, so nothing else
     * put it there. Retried as a failure, the runs file's rename committed the batch twice, under
     * two ids, and the run's stage and task rows read back twice.
     */
    private static void renamed(FileSystem f, Path tmp, Path dest) throws IOException {
        IOException failed = null;
        try {
            if (f.rename(tmp, dest)) return;
        } catch (IOException e) {
            failed = e;
        }
        boolean landed;
        try {
            landed = f.exists(dest) && !f.exists(tmp);
        } catch (IOException | RuntimeException e) {
            landed = false;
        }
        if (landed) {
            LOG.warn("sparkpredict: the store reported the rename {} -> {} failed, but it was done; kept", tmp, dest);
            return;
        }
        if (failed != null) throw failed;
        throw new IOException("rename " + tmp + " -> " + dest + " failed");
    }

    private void writeParquet(Tables.Table t, List<Object[]> rows, Path path) throws IOException {
        Map<String, String> meta = new HashMap<>();
        meta.put("sparkpredict.schema_version", Integer.toString(Tables.SCHEMA_VERSION));
        meta.put("sparkpredict.writer", "listener " + writerVersion);
        SimpleGroupFactory factory = new SimpleGroupFactory(t.parquet);
        try (ParquetWriter<Group> w = ExampleParquetWriter.builder(HadoopOutputFile.fromPath(path, conf))
                .withType(t.parquet)
                .withConf(conf)
                .withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
                .withCompressionCodec(codec())
                .withExtraMetaData(meta)
                .build()) {
            for (Object[] row : rows) {
                Group g = factory.newGroup();
                for (int i = 0; i < t.names.length; i++) {
                    Object v = row[i];
                    if (v == null) continue;
                    switch (t.kinds[i]) {
                        case STRING: g.append(t.names[i], v.toString()); break;
                        case LONG: g.append(t.names[i], ((Number) v).longValue()); break;
                        case INT: g.append(t.names[i], ((Number) v).intValue()); break;
                        case DOUBLE: g.append(t.names[i], ((Number) v).doubleValue()); break;
                        case BOOL: g.append(t.names[i], (Boolean) v); break;
                        default: throw new IllegalStateException();
                    }
                }
                w.write(g);
            }
        }
    }

    private static volatile CompressionCodecName codec;

    /**
     * Snappy, as Spark writes Parquet, where its native library loads; else gzip (pure Java).
     * snappy-java unpacks its library into java.io.tmpdir, which hardened hosts mount noexec
     * (or which is full): the listener would otherwise record nothing there.
     */
    static CompressionCodecName codec() {
        CompressionCodecName c = codec;
        if (c == null) {
            try {
                org.xerial.snappy.Snappy.maxCompressedLength(1);
                c = CompressionCodecName.SNAPPY;
            } catch (Throwable t) {  // UnsatisfiedLinkError, then NoClassDefFoundError on later calls
                c = CompressionCodecName.GZIP;
                LOG.warn("sparkpredict: snappy cannot load here ({}); the store's files are written with gzip", t.toString());
            }
            codec = c;
        }
        return c;
    }

    static String shortId() {
        return UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    /** {@code label} as batch ids carry it, by Python's rule (sparkpredict.store.io.new_batch_id). */
    static String safeLabel(String label) {
        StringBuilder safe = new StringBuilder();
        for (char c : label.toCharArray()) {
            safe.append(Character.isLetterOrDigit(c) || c == '-' || c == '_' ? c : '_');
            if (safe.length() >= MAX_LABEL) break;
        }
        return safe.toString();
    }

    static String newBatchId(String label) {
        return String.format("%013d-%s-%s", System.currentTimeMillis(), safeLabel(label), shortId());
    }

    /**
     * Remove what {@code sparkpredict ingest} stored of run {@code runId} from its event log
     * before this listener first wrote (a log ingested while the run was still going, say by a
     * cron ingest of spark.eventLog.dir): the listener records the whole run, and both copies
     * would double its stage and task rows. Each such batch goes as Python's Store.drop_batch
     * removes one: its runs file (the commit mark) first, so that its rows vanish from every
     * reader at once. Returns the number of batches removed.
     */
    int dropIngestedCopies(String runId) throws IOException {
        String label = safeLabel("ingest-" + runId);
        // A label cut to its limit may be another run's too: ingest's own check, which reads the
        // run id in the batch, removes such a copy at its next call.
        if (label.length() >= MAX_LABEL) return 0;
        FileSystem f = fs();
        Path runs = new Path(root, Tables.COMMIT_TABLE);
        if (!f.exists(runs)) return 0;
        Pattern name = Pattern.compile(
            "part-([0-9]{13}-" + Pattern.quote(label) + "-[0-9a-f]{12})\\.parquet");
        int removed = 0;
        for (FileStatus st : f.listStatus(runs)) {
            Matcher m = name.matcher(st.getPath().getName());
            if (!m.matches()) continue;
            f.delete(st.getPath(), false);
            for (Tables.Table t : Tables.ALL) {
                if (t == Tables.RUNS) continue;
                Path part = new Path(new Path(root, t.name), "part-" + m.group(1) + ".parquet");
                if (f.exists(part)) f.delete(part, false);
            }
            removed++;
        }
        return removed;
    }
}
