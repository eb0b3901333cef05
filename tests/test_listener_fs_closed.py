"""The store's Hadoop FileSystem misbehaving under the listener while its application runs.

Hadoop hands every user of a scheme (hdfs://, s3a://) one cached FileSystem, which anyone may
close: the application's own code (``FileSystem.get(conf).close()``, a common slip) or Hadoop's
shutdown hook. A closed one fails every call ("Filesystem closed"); the listener kept it and
failed every later write of the application. An object store may also report a rename failed
after it was done.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark

# The local file system under a scheme of its own, which Hadoop caches (the listener turns the
# cache off for file: only), refusing every call once closed, as HDFS and S3A do.
CLOSABLE_FS = """
package sptest;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

public class ClosableLocalFileSystem extends RawLocalFileSystem {
    private static final URI NAME = URI.create("closable:///");
    private volatile boolean closed;

    @Override public URI getUri() { return NAME; }
    @Override public String getScheme() { return "closable"; }

    private void checkOpen() throws IOException {
        if (closed) throw new IOException("Filesystem closed");
    }

    @Override public FSDataOutputStream create(Path f, FsPermission p, boolean o, int b, short r, long bs,
                                               Progressable pr) throws IOException {
        checkOpen();
        return super.create(f, p, o, b, r, bs, pr);
    }
    @Override public FSDataInputStream open(Path f, int b) throws IOException { checkOpen(); return super.open(f, b); }
    @Override public boolean rename(Path s, Path d) throws IOException { checkOpen(); return super.rename(s, d); }
    @Override public boolean delete(Path f, boolean r) throws IOException { checkOpen(); return super.delete(f, r); }
    @Override public FileStatus[] listStatus(Path f) throws IOException { checkOpen(); return super.listStatus(f); }
    @Override public boolean mkdirs(Path f, FsPermission p) throws IOException { checkOpen(); return super.mkdirs(f, p); }
    @Override public FileStatus getFileStatus(Path f) throws IOException { checkOpen(); return super.getFileStatus(f); }
    @Override public void close() throws IOException { closed = true; super.close(); }
}
"""

JOB = """
import glob
import os
import sys
import time

from pyspark.sql import SparkSession

folder = sys.argv[1]
spark = (SparkSession.builder.appName("fs-closed")
         .config("spark.sparkpredict.store", "closable://" + folder).getOrCreate())
sc = spark.sparkContext
assert sc.parallelize(range(4), 2).count() == 4
deadline = time.time() + 120
while not glob.glob(os.path.join(folder, "runs", "part-*.parquet")) and time.time() < deadline:
    time.sleep(0.2)
print("first batch committed", flush=True)
# the application's code closes the shared FileSystem of the store's scheme
jvm = sc._jvm
jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("closable:///"), sc._jsc.hadoopConfiguration()).close()
assert sc.parallelize(range(6), 3).count() == 6
spark.stop()
print("done", flush=True)
"""


def _fs_jar(tmp_path: Path, class_name: str, source: str) -> Path:
    """A jar of the test FileSystem ``sptest.<class_name>``, compiled against pyspark's jars."""
    from sparkpredict.capture.listener import _find_javac, pyspark_home

    src = tmp_path / "fs-src" / "sptest" / f"{class_name}.java"
    src.parent.mkdir(parents=True)
    src.write_text(source)
    classes = tmp_path / "fs-classes"
    classes.mkdir()
    subprocess.run([_find_javac(), "-nowarn", "-d", str(classes), "-cp", str(pyspark_home() / "jars" / "*"),
                    str(src)], check=True, capture_output=True, text=True, timeout=300)
    jar = tmp_path / f"{class_name}.jar"
    import zipfile

    with zipfile.ZipFile(jar, "w") as z:
        for f in classes.rglob("*.class"):
            z.write(f, f.relative_to(classes).as_posix())
    return jar


def _run_job(tmp_path: Path, scheme: str, class_name: str, source: str, job: str, folder: Path) -> str:
    """``job`` run by spark-submit with the listener, ``scheme``:// served by the test FileSystem."""
    from sparkpredict.capture.submit import build_command

    fs_jar = _fs_jar(tmp_path, class_name, source)
    script = tmp_path / "job.py"
    script.write_text(job)
    cmd = build_command(["--master", "local[2]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
                         "--driver-class-path", str(fs_jar),
                         "--conf", f"spark.hadoop.fs.{scheme}.impl=sptest.{class_name}",
                         str(script), str(folder)], store=str(tmp_path / "unused"), job="fs-" + scheme)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)
    return proc.stdout if proc.returncode == 0 else f"exit {proc.returncode}\n{proc.stdout}"


def test_a_store_file_system_closed_by_the_application_is_opened_again(listener_jar, tmp_path):
    folder = tmp_path / "store"
    out = _run_job(tmp_path, "closable", "ClosableLocalFileSystem", CLOSABLE_FS, JOB, folder)
    assert "first batch committed" in out and "done" in out and not out.startswith("exit "), out[-3000:]
    assert "Filesystem closed" in out, out[-3000:]  # the writer met the closed instance
    st = store_mod.open(folder)
    run = st.runs().iloc[0]
    # the second job and the run's end were lost: every write after the close failed
    assert run.status == "succeeded" and run.num_jobs == 2, (run.status, run.num_jobs)
    assert len(st.tasks()) == run.num_tasks == 2 + 3


# The local file system under a scheme of its own whose first rename of a runs file (the
# batch's commit mark) is done and then reported failed, as an object store's copy-then-delete
# may after a lost connection.
LATE_RENAME_FS = """
package sptest;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

public class LateRenameFileSystem extends RawLocalFileSystem {
    private static final URI NAME = URI.create("laterename:///");
    private static volatile boolean reported;

    @Override public URI getUri() { return NAME; }
    @Override public String getScheme() { return "laterename"; }

    @Override public boolean rename(Path s, Path d) throws IOException {
        boolean done = super.rename(s, d);
        if (done && !reported && d.getParent().getName().equals("runs") && d.getName().startsWith("part-")) {
            reported = true;
            System.out.println("rename reported failed after it was done: " + d.getName());
            return false;
        }
        return done;
    }
}
"""

ONE_JOB = """
import sys

from pyspark.sql import SparkSession

spark = (SparkSession.builder.appName("late-rename")
         .config("spark.sparkpredict.store", "laterename://" + sys.argv[1]).getOrCreate())
assert spark.sparkContext.parallelize(range(4), 2).count() == 4
spark.stop()
print("done", flush=True)
"""


def test_a_commit_whose_rename_was_reported_failed_after_it_was_done_is_not_stored_twice(listener_jar, tmp_path):
    """The runs file's rename commits a batch. Reported failed after it landed, the write was
    retried under a new batch id: the store held the batch twice, and every stage and task row
    of the run read back twice."""
    folder = tmp_path / "store"
    out = _run_job(tmp_path, "laterename", "LateRenameFileSystem", LATE_RENAME_FS, ONE_JOB, folder)
    assert "done" in out and not out.startswith("exit "), out[-3000:]
    assert "rename reported failed after it was done" in out, out[-3000:]
    st = store_mod.open(folder)
    run = st.runs().iloc[0]
    assert run.status == "succeeded"
    assert len(st.tasks()) == run.num_tasks == 2
    assert len(st.stages()) == run.num_stages == 1
