"""attach() where a reviewer found it wrong: Spark Connect builders, a script run by spark-submit
(whose JVM started first), and a later session of a process whose first one had the user's own
listener. Real spark-submit and Python processes: each test's JVM must start as the user's would.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

import sparkpredict
from sparkpredict import store as store_mod
from sparkpredict.capture.listener import merged_list, pyspark_home
from sparkpredict.errors import ListenerError

#: a listener class every Spark has: the user's own, standing beside ours
THEIRS = "org.apache.spark.scheduler.StatsReportListener"


def test_a_connect_builder_is_refused_as_nothing_would_be_recorded(tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    store = tmp_path / "s"
    with pytest.raises(ListenerError, match="Spark Connect server sc://localhost:15002") as err:
        sparkpredict.attach(SparkSession.builder.remote("sc://localhost:15002"), store=str(store))
    assert "start-connect-server.sh --conf" in err.value.fix and "listener conf" in err.value.fix
    monkeypatch.setenv("SPARK_REMOTE", "sc://spark.example.com:443")
    with pytest.raises(ListenerError, match="sc://spark.example.com:443"):
        sparkpredict.attach(SparkSession.builder, store=str(store))
    assert not store.exists()


def test_a_local_connect_builder_is_warned_of_its_lost_host_samples(tmp_path, caplog):
    from pyspark.sql import SparkSession

    with caplog.at_level(logging.WARNING):
        opts = sparkpredict.attach(SparkSession.builder.remote("local[1]"), store=str(tmp_path / "s"))._options
    assert "io.sparkpredict.SparkPredictListener" in opts["spark.extraListeners"]
    assert "local Spark Connect session (local[1])" in caplog.text and "no host samples" in caplog.text


def test_listener_error_of_a_connect_session_says_where_its_listener_is():
    from pyspark.errors import PySparkAttributeError

    class ConnectSession:  # what pyspark's Connect session answers for .sparkContext
        @property
        def sparkContext(self):
            raise PySparkAttributeError(errorClass="JVM_ATTRIBUTE_NOT_SUPPORTED",
                                        messageParameters={"attr_name": "sparkContext"})

    said = sparkpredict.listener_error(ConnectSession())
    assert said.startswith("a Spark Connect session: its driver runs in the Connect server")
    assert "sparkpredict listener conf" in said


def test_merged_jar_lists_take_a_file_uri_and_its_path_as_one_jar():
    assert merged_list("file:///opt/x.jar", "/opt/x.jar") == "file:///opt/x.jar"
    assert merged_list("file:/opt/x.jar,y.jar", "/opt/x.jar") == "file:/opt/x.jar,y.jar"
    assert merged_list("a.L", "b.L") == "a.L,b.L"


UNDER_SUBMIT = """
import sys
import sparkpredict
from pyspark.sql import SparkSession
from sparkpredict.errors import ListenerError
try:
    sparkpredict.attach(SparkSession.builder, store=sys.argv[1], job="x")
    print("ATTACHED")
except ListenerError as e:
    print("REFUSED|" + e.message + "|" + e.fix)
"""

ATTACHED_AGAIN_UNDER_SUBMIT = """
import sys
import sparkpredict
from pyspark.sql import SparkSession
spark = sparkpredict.attach(SparkSession.builder.config("spark.ui.enabled", "false"), store=sys.argv[1],
                            job="inner").getOrCreate()
print("LISTENERS|" + spark.sparkContext.getConf().get("spark.extraListeners"))
assert spark.range(100).count() == 100
spark.stop()
"""


@pytest.mark.spark
def test_attach_in_a_script_spark_submit_runs(listener_jar, tmp_path, env_of_spark_defaults):
    """spark-submit puts its pyspark.zip first on PYTHONPATH (pyspark's version.py was read from
    inside the zip: NotADirectoryError) and starts the JVM before the script: without the
    listener it is refused, naming sparkpredict submit; under sparkpredict submit, attach joins
    the user's --conf spark.extraListeners instead of replacing it."""
    env = dict(env_of_spark_defaults, PYSPARK_PYTHON=sys.executable)
    script = tmp_path / "under_submit.py"
    script.write_text(UNDER_SUBMIT)
    r = subprocess.run([str(pyspark_home() / "bin" / "spark-submit"), "--master", "local[1]", str(script),
                        str(tmp_path / "plain")], capture_output=True, text=True, timeout=300, env=env, check=False)
    line = next((x for x in r.stdout.splitlines() if x.startswith(("REFUSED", "ATTACHED"))), r.stdout + r.stderr)
    assert line.startswith("REFUSED|this script runs under spark-submit"), line[-3000:]
    assert "sparkpredict submit --" in line and not (tmp_path / "plain").exists()

    script = tmp_path / "attached_again.py"
    script.write_text(ATTACHED_AGAIN_UNDER_SUBMIT)
    st = tmp_path / "submitted"
    r = subprocess.run([sys.executable, "-m", "sparkpredict", "submit", "--store", str(st), "--job", "outer", "--",
                        "--master", "local[1]", "--conf", f"spark.extraListeners={THEIRS}", str(script), str(st)],
                       capture_output=True, text=True, timeout=300, env=env, check=False)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert f"LISTENERS|{THEIRS},io.sparkpredict.SparkPredictListener" in r.stdout
    runs = store_mod.open(st).runs()
    assert list(runs["job"]) == ["inner"] and list(runs["status"]) == ["succeeded"]


TWO_SESSIONS = """
import sys
import sparkpredict
from pyspark.sql import SparkSession
store = sys.argv[1]
b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config(
    "spark.extraListeners", sys.argv[2])
s = sparkpredict.attach(b, store=store, job="first").getOrCreate()
s.range(10).count()
s.stop()
s = sparkpredict.attach(SparkSession.builder.master("local[1]"), store=store, job="second").getOrCreate()
print("SECOND|" + s.sparkContext.getConf().get("spark.extraListeners"))
print("JARS|" + s.sparkContext.getConf().get("spark.jars"))
s.range(10).count()
s.stop()
"""


@pytest.mark.spark
def test_a_later_attached_session_keeps_the_users_own_listener(listener_jar, tmp_path, env_of_spark_defaults):
    """The first session's lists became the JVM's system properties, which the next SparkConf
    reads: the second attach replaced them with the listener's alone (the user's listener
    stopped hearing the second application), and named the listener jar twice."""
    script = tmp_path / "two.py"
    script.write_text(TWO_SESSIONS)
    env = dict(env_of_spark_defaults, PYSPARK_PYTHON=sys.executable)
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "s"), THEIRS], capture_output=True, text=True,
                       timeout=300, env=env, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"SECOND|{THEIRS},io.sparkpredict.SparkPredictListener" in r.stdout, r.stdout
    jars = next(x for x in r.stdout.splitlines() if x.startswith("JARS|"))[5:].split(",")
    assert len(jars) == 1 and jars[0].endswith(os.path.basename(str(listener_jar))), jars
    assert sorted(store_mod.open(tmp_path / "s").runs()["job"]) == ["first", "second"]
