"""``sparkpredict submit`` reads the user's settings as spark-submit reads them: ``--conf``, then
the properties files (``--properties-file``, ``spark-defaults.conf``). Jars, listeners and
plugins are merged with the listener's; the user's store is the one recorded into and read back.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.submit import build_command
from sparkpredict.capture.submit_args import dynamic_allocation_enabled, submit_store
from sparkpredict.cli import main
from sparkpredict.config import KEY_STORE, KEY_TASKS, LISTENER_CLASS
from sparkpredict.errors import InputError

STATS = "org.apache.spark.scheduler.StatsReportListener"


def _opts(cmd: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(the options, every --conf key with its values in order) of a built command."""
    opts = cmd[1:-1]  # the app is job.py, without arguments
    conf: dict[str, list[str]] = {}
    for i, a in enumerate(opts):
        if a in ("--conf", "-c"):
            k, v = opts[i + 1].split("=", 1)
            conf.setdefault(k, []).append(v)
    return opts, conf


def _jars(opts: list[str]) -> str:
    assert opts.count("--jars") == 1, opts  # one list: a second --jars would replace the first
    return opts[opts.index("--jars") + 1]


@pytest.fixture
def conf_dir(tmp_path, monkeypatch) -> Path:
    """An empty $SPARK_CONF_DIR: the spark-defaults.conf spark-submit reads."""
    d = tmp_path / "spark-conf"
    d.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(d))
    return d


def test_the_users_jars_join_the_listener_jar(listener_jar, conf_dir, tmp_path):
    """spark-submit's --jars replaces spark.jars: the listener's --jars used to drop jars given as
    --conf spark.jars or in a properties file."""
    jar = str(listener_jar)
    opts, _ = _opts(build_command(["--conf", "spark.jars=/x/dummy.jar", "job.py"]))
    assert _jars(opts) == f"/x/dummy.jar,{jar}"
    # --jars given: spark-submit itself would drop spark.jars, so the list is --jars's
    opts, _ = _opts(build_command(["--jars=/x/a.jar", "--conf", "spark.jars=/x/b.jar", "job.py"]))
    assert f"--jars=/x/a.jar,{jar}" in opts and "--jars" not in opts
    assert _jars(_opts(build_command(["--jars", f"/x/a.jar,{jar}", "job.py"]))[0]) == f"/x/a.jar,{jar}"
    (conf_dir / "spark-defaults.conf").write_text("spark.jars  /x/site.jar, /x/two.jar\n")
    assert _jars(_opts(build_command(["job.py"]))[0]) == f"/x/site.jar,/x/two.jar,{jar}"
    assert _jars(_opts(build_command(["-c", "spark.jars=/x/mine.jar", "job.py"]))[0]) == f"/x/mine.jar,{jar}"
    own = tmp_path / "own.conf"
    own.write_text("spark.jars=/x/own.jar\n")
    assert _jars(_opts(build_command(["--properties-file", str(own), "job.py"]))[0]) == f"/x/own.jar,{jar}"


def test_listeners_plugins_and_settings_of_spark_defaults_are_kept(listener_jar, conf_dir, tmp_path):
    """A cluster's spark-defaults.conf lists its own listener and plugin and names the store:
    submit used to replace the lists with ours and record into the default store."""
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.extraListeners  {STATS}\n"
        "spark.plugins=com.x.GpuPlugin\n"
        f"{KEY_STORE}  file:///some/store\n"
        f"{KEY_TASKS}  false\n"
        "spark.sparkpredict.job  site-default\n"
        "spark.dynamicAllocation.enabled  true\n")
    _, conf = _opts(build_command(["job.py"], job="J"))
    assert conf["spark.extraListeners"] == [f"{STATS},{LISTENER_CLASS}"]
    assert conf["spark.plugins"] == ["com.x.GpuPlugin,io.sparkpredict.HostMetricsPlugin"]
    assert KEY_STORE not in conf and KEY_TASKS not in conf  # the file's values stand
    assert conf["spark.sparkpredict.job"] == ["J"]           # asked for: outranks the file
    assert submit_store(["job.py"]) == "/some/store"
    assert dynamic_allocation_enabled(["job.py"])
    # --store asked for outranks the file's store too
    _, conf = _opts(build_command(["job.py"], store=str(tmp_path / "s")))
    assert conf[KEY_STORE] == [(tmp_path / "s").as_uri()] and "spark.sparkpredict.job" not in conf
    # the user's --conf outranks the file, as in spark-submit: its list is the one merged
    _, conf = _opts(build_command(["--conf", "spark.extraListeners=a.B", "job.py"]))
    assert conf["spark.extraListeners"] == [f"a.B,{LISTENER_CLASS}"]
    # --properties-file: spark-submit reads spark-defaults.conf only with --load-spark-defaults
    own = tmp_path / "own.conf"
    own.write_text("spark.extraListeners=c.D\n")
    _, conf = _opts(build_command(["--properties-file", str(own), "job.py"]))
    assert conf["spark.extraListeners"] == [f"c.D,{LISTENER_CLASS}"] and conf[KEY_TASKS] == ["true"]
    assert not dynamic_allocation_enabled(["--properties-file", str(own), "job.py"])
    both = ["--properties-file", str(own), "--load-spark-defaults", "job.py"]
    _, conf = _opts(build_command(both))
    assert conf["spark.extraListeners"] == [f"c.D,{LISTENER_CLASS}"] and KEY_TASKS not in conf
    assert submit_store(both) == "/some/store"
    extra = tmp_path / "extra.conf"
    extra.write_text("spark.extraListeners e.F\n")
    _, conf = _opts(build_command([*both[:2], "--extra-properties-file", str(extra), "job.py"]))
    assert conf["spark.extraListeners"] == [f"e.F,{LISTENER_CLASS}"]


def test_properties_files_are_read_as_java_reads_them(tmp_path):
    """Continued lines, escapes, ':' and blanks as separators, comments: the values below are
    those java.util.Properties.load gives for this file (Spark then trims them)."""
    from sparkpredict.capture.properties import read_properties

    f = tmp_path / "p.conf"
    f.write_text("# comment \\\n" "spark.a   1  \n" "spark.b=x\\\n" "   y\\\\\n" "spark.c:  q\\:r\\=s\n"
                 "  ! another\n" "spark.d\n" "spark.e = a\\tb\\u0041\n" "spark\\ f val\n"
                 "spark.g     list,\\\n" "  # not a comment\n" "spark.a 2\n" "spark.last=end\\")
    assert read_properties(str(f)) == {
        "spark.a": "2", "spark.b": "xy\\", "spark.c": "q:r=s", "spark.d": "", "spark.e": "a\tbA",
        "spark f": "val", "spark.g": "list,# not a comment", "spark.last": "end"}
    assert read_properties(str(tmp_path / "missing.conf")) == {}


def test_the_store_is_the_one_the_listener_records_into(conf_dir, tmp_path, monkeypatch):
    """--store, else the user's spark.sparkpredict.store (--conf, then the properties files),
    else the default: submit used to read the default store after a run recorded elsewhere."""
    monkeypatch.setenv("SPARKPREDICT_STORE", str(tmp_path / "default"))
    s6 = tmp_path / "s6"
    assert submit_store(["job.py"]) == str(tmp_path / "default")
    assert submit_store(["--conf", f"{KEY_STORE}=file:{s6}", "job.py"]) == str(s6)
    assert submit_store(["job.py", "--conf", f"{KEY_STORE}=file:{s6}"]) == str(tmp_path / "default")  # an app argument
    (conf_dir / "spark-defaults.conf").write_text(f"{KEY_STORE}=hdfs:///apps/store\n")
    assert submit_store(["job.py"]) == "hdfs:///apps/store"
    assert submit_store(["--conf", f"{KEY_STORE}={s6}", "job.py"]) == str(s6)
    assert submit_store(["job.py"], store=str(s6)) == str(s6)
    # the same store written twice is fine; two different ones are a guess either way
    assert submit_store(["--conf", f"{KEY_STORE}=file://{s6}", "job.py"], store=str(s6)) == str(s6)
    with pytest.raises(InputError, match="name different stores"):
        submit_store(["--conf", f"{KEY_STORE}={tmp_path / 'other'}", "job.py"], store=str(s6))


def test_conflicting_stores_are_an_error_before_anything_runs(tmp_path, capsys):
    rc = main(["submit", "--store", str(tmp_path / "a"), "--", "--master", "local[1]",
               "--conf", f"{KEY_STORE}={tmp_path / 'b'}", "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: --store {tmp_path / 'a'} and --conf {KEY_STORE}={tmp_path / 'b'} name " \
        "different stores" in err and f"fix: give the store once: drop --conf {KEY_STORE}, or --store" in err
    assert "Traceback" not in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# ---- real spark-submit runs -------------------------------------------------------------------

FAILING_JOB = """\
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
assert sc.parallelize(range(10), 2).count() == 10
with open(sys.argv[1], "w") as f:  # the jars Spark added, as SparkContext lists them
    f.write(sc._jsc.sc().listJars().mkString("\\n"))
spark.stop()
sys.exit(3)  # after the last Spark job: the listener recorded the run as succeeded
"""

_FAST = ["--master", "local[1]", "--driver-memory", "512m",
         "--driver-java-options", "-XX:TieredStopAtLevel=1"]  # a faster start of a short JVM


def _job_and_jar(tmp_path: Path) -> tuple[Path, Path]:
    job = tmp_path / "failing_job.py"
    job.write_text(FAILING_JOB)
    jar = tmp_path / "dummy.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n\n")
        z.writestr("dummy.txt", "a jar of the user's own")
    return job, jar


def _check_failed_run(store: Path, job: str, listed: Path, capsys) -> dict:
    """The one run in ``store``: corrected to failed; the user's jar reached SparkContext."""
    err = capsys.readouterr().err
    runs = store_mod.open(store).runs()
    assert len(runs) == 1, err
    row = runs.iloc[0]
    assert f"sparkpredict: recorded {row.run_id} in {store}" in err
    assert "cannot read the store" not in err
    assert row.job == job and row.status == "failed"
    assert row.error_message == "spark-submit exited with code 3"
    assert any(j.endswith("/dummy.jar") for j in listed.read_text().splitlines())
    return json.loads(row.properties_json)


@pytest.mark.spark
def test_spark_defaults_conf_lists_store_and_jars_reach_the_run(listener_jar, conf_dir, tmp_path,
                                                                monkeypatch, capsys):
    default = tmp_path / "default-store"
    monkeypatch.setenv("SPARKPREDICT_STORE", str(default))
    job, jar = _job_and_jar(tmp_path)
    store = tmp_path / "site-store"
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.extraListeners  {STATS}\n"
        f"{KEY_STORE}  file:{store}\n"  # Hadoop's one-slash form
        f"spark.jars  {jar}\n"
        f"{KEY_TASKS}  false\n"
        "spark.ui.enabled  false\n")
    listed = tmp_path / "jars.txt"
    assert main(["submit", "--job", "site", "--", *_FAST, str(job), str(listed)]) == 3
    props = _check_failed_run(store, "site", listed, capsys)
    assert props["spark.extraListeners"] == f"{STATS},{LISTENER_CLASS}"
    assert props[KEY_TASKS] == "false" and store_mod.open(store).tasks().empty
    assert not default.exists()


@pytest.mark.spark
def test_conf_store_and_jars_reach_the_run(listener_jar, conf_dir, tmp_path, monkeypatch, capsys):
    default = tmp_path / "default-store"
    monkeypatch.setenv("SPARKPREDICT_STORE", str(default))
    job, jar = _job_and_jar(tmp_path)
    s6 = tmp_path / "s6"
    listed = tmp_path / "jars.txt"
    assert main(["submit", "--job", "s6-job", "--", *_FAST, "--conf", "spark.ui.enabled=false",
                 "--conf", f"{KEY_STORE}=file://{s6}", "--conf", f"spark.jars={jar}",
                 "--conf", f"{KEY_TASKS}=false", str(job), str(listed)]) == 3
    _check_failed_run(s6, "s6-job", listed, capsys)
    assert not default.exists()
