"""The store's Hadoop FileSystem closed under the listener while its application runs.

Hadoop hands every user of a scheme (hdfs://, s3a://) one cached FileSystem, which anyone may
close: the application's own code (``FileSystem.get(conf).close()``, a common slip) or Hadoop's
shutdown hook. A closed one fails every call ("Filesystem closed"); the listener kept it and
failed every later write of the application.
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


def _closable_fs_jar(tmp_path: Path) -> Path:
    from sparkpredict.capture.listener import _find_javac, pyspark_home

    src = tmp_path / "fs-src" / "sptest" / "ClosableLocalFileSystem.java"
    src.parent.mkdir(parents=True)
    src.write_text(CLOSABLE_FS)
    classes = tmp_path / "fs-classes"
    classes.mkdir()
    subprocess.run([_find_javac(), "-nowarn", "-d", str(classes), "-cp", str(pyspark_home() / "jars" / "*"),
                    str(src)], check=True, capture_output=True, text=True, timeout=300)
    jar = tmp_path / "closable-fs.jar"
    import zipfile

    with zipfile.ZipFile(jar, "w") as z:
        for f in classes.rglob("*.class"):
            z.write(f, f.relative_to(classes).as_posix())
    return jar


def test_a_store_file_system_closed_by_the_application_is_opened_again(listener_jar, tmp_path):
    from sparkpredict.capture.submit import build_command

    fs_jar = _closable_fs_jar(tmp_path)
    script = tmp_path / "job.py"
    script.write_text(JOB)
    folder = tmp_path / "store"
    cmd = build_command(["--master", "local[2]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
                         "--driver-class-path", str(fs_jar),
                         "--conf", "spark.hadoop.fs.closable.impl=sptest.ClosableLocalFileSystem",
                         str(script), str(folder)], store=str(tmp_path / "unused"), job="fs-closed")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0 and "first batch committed" in out and "done" in out, out[-3000:]
    assert "Filesystem closed" in out, out[-3000:]  # the writer met the closed instance
    st = store_mod.open(folder)
    run = st.runs().iloc[0]
    # the second job and the run's end were lost: every write after the close failed
    assert run.status == "succeeded" and run.num_jobs == 2, (run.status, run.num_jobs)
    assert len(st.tasks()) == run.num_tasks == 2 + 3
