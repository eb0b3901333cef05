"""Building and attaching the listener: the jar, its cache, and the errors users can meet."""
from __future__ import annotations

import os
import shlex
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


def test_listener_conf_for_a_cluster_names_its_jar_and_keeps_the_files_lists(tmp_path, capsys):
    """`listener conf` printed this machine's cache path as spark.jars, and its lines appended to
    a spark-defaults.conf replaced the file's own jars and listeners (a later line wins)."""
    from sparkpredict.capture.properties import read_properties
    from sparkpredict.cli import main

    defaults = tmp_path / "spark-defaults.conf"
    defaults.write_text("spark.jars  hdfs:///apps/lineage.jar\n"
                        "spark.extraListeners=com.example.LineageListener\n"
                        "spark.executor.memory 4g\n")
    jar = "hdfs:///apps/sparkpredict/sparkpredict-listener.jar"
    store = tmp_path / "store"
    assert main(["listener", "conf", "--store", str(store), "--jar", jar, "--merge", str(defaults)]) == 0
    out = capsys.readouterr().out
    with open(defaults, "a") as f:  # as the conf file's header says: append them
        f.write(out)
    merged = read_properties(str(defaults))
    assert merged["spark.jars"] == f"hdfs:///apps/lineage.jar,{jar}"
    assert merged["spark.extraListeners"] == "com.example.LineageListener,io.sparkpredict.SparkPredictListener"
    assert merged["spark.plugins"] == "io.sparkpredict.HostMetricsPlugin"
    assert merged["spark.executor.memory"] == "4g" and merged["spark.sparkpredict.store"] == store.as_uri()
    # a file to merge that is not there: said, nothing printed
    assert main(["listener", "conf", "--store", str(store), "--merge", str(tmp_path / "nope.conf")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "is not a readable file" in captured.err and "fix: " in captured.err
    assert main(["listener", "conf", "--store", str(store), "--jar", " "]) == 2
    assert "location is empty" in capsys.readouterr().err


_LATE_ATTACH = textwrap.dedent("""
    from pyspark.sql import SparkSession
    import sparkpredict
    from sparkpredict import listener_error  # the top-level export
    from sparkpredict.errors import ListenerError, StoreError
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    print("NOT-ATTACHED", listener_error(spark))
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
    # listener_error on a session without the listener said "'JavaPackage' object is not callable"
    line = next(ln for ln in out_late.splitlines() if ln.startswith("NOT-ATTACHED"))
    assert "listener is not attached" in line and "sparkpredict.attach(SparkSession.builder" in line
    assert "JavaPackage" not in line
    assert other.returncode == 0, out_other[-3000:]
    line = next(ln for ln in out_other.splitlines() if ln.startswith("LAST-ERROR"))
    assert "built for Spark 3.5.0" in line and f"runs on Spark {spark_version()}" in line
    assert "built for Spark 3.5.0" in out_other.split("LAST-ERROR")[0]  # logged as well
    assert not (tmp_path / "b").exists()


def _jar_with(path, resource: str) -> str:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n\n")
        z.writestr(resource, "the user's own jar\n")
    return str(path)


def test_attach_adds_to_the_lists_the_application_would_have_had(listener_jar, tmp_path, monkeypatch):
    """The builder's own jars, listeners and plugins stay, else spark-defaults.conf's (as
    spark-submit takes them: the builder's --conf outranks the file); ours join them once."""
    from pyspark.sql import SparkSession

    import sparkpredict

    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        "spark.jars /defaults/lib.jar\nspark.plugins com.example.DefaultsPlugin\n"
        "spark.extraListeners com.example.DefaultsListener\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    builder = (SparkSession.builder.config("spark.jars", "/x/mylib.jar")
               .config("spark.extraListeners", "org.apache.spark.scheduler.StatsReportListener"))
    opts = sparkpredict.attach(builder, store=str(tmp_path / "s"))._options
    assert opts["spark.jars"] == f"/x/mylib.jar,{listener_jar}"
    assert opts["spark.extraListeners"] == \
        "org.apache.spark.scheduler.StatsReportListener,io.sparkpredict.SparkPredictListener"
    assert opts["spark.plugins"] == "com.example.DefaultsPlugin,io.sparkpredict.HostMetricsPlugin"
    # attached twice (a notebook cell run again): each entry once
    again = sparkpredict.attach(builder, store=str(tmp_path / "s"))._options
    assert again["spark.jars"] == opts["spark.jars"] and again["spark.plugins"] == opts["spark.plugins"]
    # the cluster's store (conf/spark-defaults.conf.sparkpredict) is the one an attach without
    # store= records into; the default store only when none is set anywhere
    monkeypatch.delenv("SPARKPREDICT_STORE", raising=False)
    cluster_store = tmp_path / "cluster-store"
    (conf_dir / "spark-defaults.conf").write_text(f"spark.sparkpredict.store file://{cluster_store}\n")
    assert sparkpredict.attach(SparkSession.builder)._options["spark.sparkpredict.store"] == \
        f"file://{cluster_store}"
    # nothing of the user's anywhere: ours alone, as before
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-conf"))
    bare = sparkpredict.attach(SparkSession.builder, store=str(tmp_path / "s"))._options
    assert bare["spark.jars"] == str(listener_jar)
    assert bare["spark.extraListeners"] == "io.sparkpredict.SparkPredictListener"


_KEEPS_USERS_LISTS = textwrap.dedent("""
    from pyspark.sql import SparkSession
    import sparkpredict
    builder = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
               .config("spark.extraListeners", "org.apache.spark.scheduler.StatsReportListener")
               .config("spark.jars", MYJAR))
    spark = sparkpredict.attach(builder, store=STORE, job="kept").getOrCreate()
    sc = spark.sparkContext
    jsc = sc._jsc.sc()
    print("LISTENERS", jsc.conf().get("spark.extraListeners"))
    print("JARS", jsc.conf().get("spark.jars"))
    print("BUS", ",".join(str(x.getClass().getName()) for x in jsc.listenerBus().listeners()))
    loader = sc._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    print("RESOURCE", loader.getResource("mylib-marker.txt") is not None)
    assert sc.parallelize(range(10)).sum() == 45
    spark.stop()
""")


def _in_a_fresh_python(script: str, tmp_path, **env: str) -> dict[str, str]:
    """Run ``script`` in a new Python process (its JVM starts with what attach set), with STORE
    and MYJAR (a jar holding mylib-marker.txt) defined; returns its "KEY value" lines."""
    jar = _jar_with(tmp_path / "mylib.jar", "mylib-marker.txt")
    full = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_CONF_DIR=str(tmp_path / "no-conf"))
    full.pop("PYSPARK_SUBMIT_ARGS", None)
    full.update({k: v.format(jar=jar) for k, v in env.items()})
    r = subprocess.run([sys.executable, "-c", f"STORE={str(tmp_path / 's')!r}\nMYJAR={jar!r}\n" + script],
                       env=full, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(ln.split(" ", 1) for ln in r.stdout.splitlines() if " " in ln)


@pytest.mark.spark
def test_attach_keeps_the_users_listener_and_jar_in_a_real_application(listener_jar, tmp_path):
    """A fresh Python process (the JVM starts with what attach set): the user's listener is on
    Spark's listener bus beside ours, and the user's jar is on the driver's classpath."""
    from sparkpredict.store import io as store_io

    said = _in_a_fresh_python(_KEEPS_USERS_LISTS, tmp_path)
    assert said["LISTENERS"].split(",") == ["org.apache.spark.scheduler.StatsReportListener",
                                            "io.sparkpredict.SparkPredictListener"]
    assert said["JARS"].split(",")[0].endswith("mylib.jar") and str(listener_jar) in said["JARS"]
    bus = said["BUS"].split(",")
    assert "org.apache.spark.scheduler.StatsReportListener" in bus and "io.sparkpredict.SparkPredictListener" in bus
    assert said["RESOURCE"] == "True"
    assert store_io.open(tmp_path / "s").runs().iloc[0].job == "kept"


_SUBMIT_ARGS_JARS = textwrap.dedent("""
    import os
    from pyspark.sql import SparkSession
    import sparkpredict
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = sparkpredict.attach(builder, store=STORE, job="notebook").getOrCreate()
    sc = spark.sparkContext
    print("ARGS", os.environ["PYSPARK_SUBMIT_ARGS"])
    print("JARS", sc._jsc.sc().conf().get("spark.jars"))
    loader = sc._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    print("RESOURCE", loader.getResource("mylib-marker.txt") is not None)
    assert sc.parallelize(range(10)).sum() == 45
    spark.stop()
""")


@pytest.mark.spark
def test_attach_joins_the_jars_of_pyspark_submit_args(listener_jar, tmp_path):
    """A notebook's `PYSPARK_SUBMIT_ARGS="--jars mylib.jar pyspark-shell"`: spark-submit takes
    --jars over the builder's spark.jars, so without attach joining it the listener's jar was
    dropped and nothing was recorded (Spark: ClassNotFoundException for the listener)."""
    from sparkpredict.store import io as store_io

    said = _in_a_fresh_python(_SUBMIT_ARGS_JARS, tmp_path, PYSPARK_SUBMIT_ARGS="--jars {jar} pyspark-shell")
    jar = tmp_path / "mylib.jar"
    assert said["ARGS"] == f"--jars {jar},{listener_jar} pyspark-shell"
    assert said["JARS"].split(",")[0].endswith("mylib.jar") and str(listener_jar) in said["JARS"]
    assert said["RESOURCE"] == "True"
    assert store_io.open(tmp_path / "s").runs().iloc[0].job == "notebook"


JAR = "/x/my lib.jar"  # a space: the rewritten variable must still split into the same words


@pytest.mark.parametrize(("given", "becomes"), [
    (["--conf", f"spark.jars={JAR}", "pyspark-shell"], ["--conf", f"spark.jars={JAR},OURS", "pyspark-shell"]),
    (["-c", f"spark.jars={JAR}", "pyspark-shell"], ["-c", f"spark.jars={JAR},OURS", "pyspark-shell"]),
    ([f"--conf=spark.jars={JAR}", f"--jars={JAR}", "pyspark-shell"],
     [f"--conf=spark.jars={JAR},OURS", f"--jars={JAR},OURS", "pyspark-shell"]),
    # what follows pyspark-shell is the shell's, not spark-submit's: left as it is
    (["--master", "local[1]", "pyspark-shell", "--jars", "x"], None),
    (["--conf", "spark.ui.enabled=false", "pyspark-shell"], None),
])
def test_attach_puts_its_jar_in_every_jar_list_of_pyspark_submit_args(listener_jar, tmp_path, monkeypatch,
                                                                      given, becomes):
    """PySpark passes the builder's settings to spark-submit before $PYSPARK_SUBMIT_ARGS, and
    spark-submit builds the driver's classpath from its --jars, else from its last --conf
    spark.jars: a list of jars there must hold the listener's too (a Spark run below)."""
    from pyspark.sql import SparkSession

    import sparkpredict

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-conf"))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", shlex.join(given))
    opts = sparkpredict.attach(SparkSession.builder, store=str(tmp_path / "s"))._options
    if becomes is None:  # untouched, byte for byte
        assert os.environ["PYSPARK_SUBMIT_ARGS"] == shlex.join(given)
        return
    assert shlex.split(os.environ["PYSPARK_SUBMIT_ARGS"]) == [w.replace("OURS", str(listener_jar)) for w in becomes]
    assert opts["spark.jars"] == f"{JAR},{listener_jar}"


@pytest.mark.spark
def test_attach_joins_a_conf_spark_jars_of_pyspark_submit_args(listener_jar, tmp_path):
    """`PYSPARK_SUBMIT_ARGS="--conf spark.jars=mylib.jar pyspark-shell"`: that --conf comes after
    the builder's, so spark-submit put mylib.jar alone on the driver's classpath and SparkContext
    failed (ClassNotFoundException: io.sparkpredict.HostMetricsPlugin)."""
    from sparkpredict.store import io as store_io

    said = _in_a_fresh_python(_SUBMIT_ARGS_JARS, tmp_path,
                              PYSPARK_SUBMIT_ARGS="--conf spark.jars={jar} pyspark-shell")
    assert said["RESOURCE"] == "True"
    assert store_io.open(tmp_path / "s").runs().iloc[0].job == "notebook"
