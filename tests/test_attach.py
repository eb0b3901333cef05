"""Building and attaching the listener: the jar, its cache, and the errors users can meet."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

from sparkpredict.capture.listener import build_listener, listener_conf, spark_version
from sparkpredict.errors import ListenerError, StoreError


def test_no_jdk_gives_a_clear_error(monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))  # nothing cached
    with pytest.raises(ListenerError) as info:
        build_listener()
    assert "javac" in info.value.message and "JDK" in info.value.fix
    assert not (tmp_path / "cache" / "listener").exists() or not list((tmp_path / "cache" / "listener").iterdir())


def test_jar_is_stamped_cached_and_reused(listener_jar):
    assert listener_jar == build_listener()  # cache hit: same path
    mtime = listener_jar.stat().st_mtime_ns
    assert build_listener().stat().st_mtime_ns == mtime
    with zipfile.ZipFile(listener_jar) as z:
        manifest = z.read("META-INF/MANIFEST.MF").decode()
        props = z.read("io/sparkpredict/build.properties").decode()
        assert "io/sparkpredict/SparkPredictListener.class" in z.namelist()
    assert f"Spark-Version: {spark_version()}" in manifest and "Implementation-Version: " in manifest
    assert f"spark_version={spark_version()}" in props


def test_listener_conf_keys(listener_jar, tmp_path):
    conf = listener_conf(store=str(tmp_path / "s"), job="j", tasks=False, input_bytes=123)
    assert conf["spark.jars"] == str(listener_jar)
    assert conf["spark.extraListeners"] == "io.sparkpredict.SparkPredictListener"
    assert conf["spark.sparkpredict.store"] == (tmp_path / "s").as_uri()
    assert conf["spark.sparkpredict.job"] == "j" and conf["spark.sparkpredict.tasks"] == "false"
    assert conf["spark.sparkpredict.inputBytes"] == "123"
    # a local file is no store: said now, not logged by a listener that records nothing
    (tmp_path / "f").write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        listener_conf(store=str(tmp_path / "f"))


_LATE_ATTACH = textwrap.dedent("""
    from pyspark.sql import SparkSession
    import sparkpredict
    from sparkpredict.errors import ListenerError, StoreError
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        sparkpredict.attach(SparkSession.builder, store=STORE)
    except ListenerError as exc:
        print("LISTENER-ERROR", exc.message, "FIX", exc.fix)
    spark.stop()
""")

_OTHER_SPARK = textwrap.dedent("""
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.jars", JAR).config("spark.extraListeners", "io.sparkpredict.SparkPredictListener")
             .config("spark.sparkpredict.store", STORE).getOrCreate())
    assert spark.sparkContext.parallelize(range(10)).sum() == 45
    print("LAST-ERROR", spark.sparkContext._jvm.io.sparkpredict.SparkPredictListener.lastError())
    spark.stop()
""")


@pytest.mark.spark
def test_late_attach_and_jar_for_other_spark(listener_jar, tmp_path):
    """Two fresh Python processes (run at once): attach() after a plain session started, and a
    jar stamped for another Spark version (the app runs, nothing is written, the log says why)."""
    fake = tmp_path / "listener-other-spark.jar"
    with zipfile.ZipFile(listener_jar) as src, zipfile.ZipFile(fake, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "io/sparkpredict/build.properties":
                data = data.decode().replace(f"spark_version={spark_version()}", "spark_version=3.5.0").encode()
            dst.writestr(item, data)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    late = subprocess.Popen([sys.executable, "-c", f"STORE={str(tmp_path / 'a')!r}\n" + _LATE_ATTACH],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    other = subprocess.Popen(
        [sys.executable, "-c", f"STORE={(tmp_path / 'b').as_uri()!r}\nJAR={str(fake)!r}\n" + _OTHER_SPARK],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out_late, _ = late.communicate(timeout=300)
    out_other, _ = other.communicate(timeout=300)
    assert late.returncode == 0, out_late[-3000:]
    line = next(ln for ln in out_late.splitlines() if ln.startswith("LISTENER-ERROR"))
    assert "already running" in line and "before the first SparkSession" in line and "restart Python" in line
    assert other.returncode == 0, out_other[-3000:]
    line = next(ln for ln in out_other.splitlines() if ln.startswith("LAST-ERROR"))
    assert "built for Spark 3.5.0" in line and f"runs on Spark {spark_version()}" in line
    assert "built for Spark 3.5.0" in out_other.split("LAST-ERROR")[0]  # logged as well
    assert not (tmp_path / "b").exists()
