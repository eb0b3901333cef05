"""Which store a command reads when none is given, and how a store setting becomes a folder:
the same folder the listener of the same setting records into (ListenerSettings.localStore,
compared with the JVM's in test_listener.py)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sparkpredict.capture.submit_args import submit_store
from sparkpredict.config import cache_dir, default_store, embedded_store, resolve_store
from sparkpredict.errors import StoreError


@pytest.fixture
def cluster_conf(tmp_path, monkeypatch):
    """A $SPARK_CONF_DIR whose spark-defaults.conf names the cluster's store, as
    conf/spark-defaults.conf.sparkpredict sets it up; $SPARKPREDICT_STORE names another."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(f"spark.sparkpredict.store   file://{tmp_path}/cluster-store  \n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    monkeypatch.setenv("SPARKPREDICT_STORE", str(tmp_path / "env-store"))
    return conf / "spark-defaults.conf"


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "sparkpredict", *args], capture_output=True, text=True,
                          timeout=120, check=False, env=env)


def test_readers_default_to_the_clusters_store_as_the_listener_does(cluster_conf, tmp_path):
    """Without it, `submit` and `attach` recorded into the spark-defaults store while `suggest`
    and `store summary` read $SPARKPREDICT_STORE (or ~/.sparkpredict/store), and said "no store"."""
    assert resolve_store(None) == str(tmp_path / "cluster-store")
    assert default_store() == f"file://{tmp_path}/cluster-store"
    assert embedded_store() == str(tmp_path / "env-store")  # the listener's own, with no setting at all
    # what spark-submit reads: the same file, so the same store; a --properties-file without
    # --load-spark-defaults leaves spark-defaults.conf unread, and the listener's own default holds
    assert submit_store(["--master", "local[1]", "app.py"]) == str(tmp_path / "cluster-store")
    props = tmp_path / "other.conf"
    props.write_text("spark.master local[1]\n")
    assert submit_store(["--properties-file", str(props), "app.py"]) == str(tmp_path / "env-store")
    r = _cli("store", "summary")
    assert r.returncode == 2
    assert f"no sparkpredict store at '{tmp_path}/cluster-store'" in r.stderr
    assert f"set spark.sparkpredict.store in {cluster_conf} (it names this path)" in r.stderr
    # an empty value is none, as the listener reads it
    cluster_conf.write_text("spark.sparkpredict.store =\n")
    assert resolve_store(None) == str(tmp_path / "env-store")


def test_a_store_with_blanks_around_it_is_refused(monkeypatch, tmp_path):
    """Spark trims a properties file's value, so the listener wrote /x while Python read '/x '
    (and ' /x', a folder named ' ' under the current one)."""
    for value in (f"{tmp_path}/s ", f" {tmp_path}/s", f"{tmp_path}/s\n"):
        with pytest.raises(StoreError, match="begins or ends with blanks") as e:
            resolve_store(value)
        assert repr(f"{tmp_path}/s") in e.value.fix
    r = _cli("store", "summary", "--store", f" {tmp_path}/s", "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"].endswith("begins or ends with blanks")
    assert not (tmp_path / "s").exists()


def test_store_paths_are_read_lexically_with_only_the_users_home_expanded(monkeypatch, tmp_path):
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "sub")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    # Hadoop's Path, the listener's, reads "..": link/../st is tmp/st there, not tmp/real/st
    assert resolve_store("link/../st") == str(tmp_path / "st")
    assert resolve_store("~/st") == str(tmp_path / "home" / "st")
    assert resolve_store("~") == str(tmp_path / "home")
    assert resolve_store("~root/st") == str(tmp_path / "~root" / "st")  # as the listener reads it


def test_a_relative_cache_folder_is_made_absolute(monkeypatch, tmp_path):
    """The jar's path in it goes into spark.jars and the executors' class path, which other
    working folders read."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARKPREDICT_CACHE", "rel-cache")
    assert cache_dir() == tmp_path / "rel-cache"


def test_a_listener_setting_it_could_not_read_is_refused_before_the_run(tmp_path):
    """The listener logs such a value and uses its default (test_listener.py); submit and attach
    say so before anything runs, naming where to fix it."""
    from pyspark.sql import SparkSession

    from sparkpredict.capture.listener import attach
    from sparkpredict.capture.submit import build_command
    from sparkpredict.errors import InputError

    store = str(tmp_path / "s")
    ok = build_command(["--conf", "spark.sparkpredict.flushIntervalMs=5s", "--conf",
                        "spark.sparkpredict.tasks=FALSE", "app.py"], store=store)
    assert "spark.sparkpredict.flushIntervalMs=5s" in ok
    ok = build_command(["--conf", "spark.sparkpredict.inputBytes=120g", "app.py"], store=store)
    assert "spark.sparkpredict.inputBytes=120g" in ok
    # a declared size the listener cannot read: it logged it and recorded the measured input
    # (capture.md: a value a key does not take is refused by submit and attach)
    for key, value in (("flushIntervalMs", "soon"), ("flushIntervalMs", "5 s"), ("tasks", "yes"),
                       ("flushEveryTasks", "-1"), ("stopTimeoutMs", "-5"), ("inputBytes", "lots"),
                       ("inputBytes", "0"), ("inputBytes", "-5MB")):
        with pytest.raises(InputError, match=f"spark.sparkpredict.{key}={value} is not") as e:
            build_command(["--conf", f"spark.sparkpredict.{key}={value}", "app.py"], store=store)
        assert "your --conf or properties file" in e.value.fix
    with pytest.raises(InputError, match="spark.sparkpredict.tasks=yes is not true or false") as e:
        attach(SparkSession.builder.config("spark.sparkpredict.tasks", "yes"), store=store)
    assert "the builder's .config()" in e.value.fix
    with pytest.raises(InputError, match="spark.sparkpredict.inputBytes=lots is not a size above zero") as e:
        attach(SparkSession.builder.config("spark.sparkpredict.inputBytes", "lots"), store=store)
    assert "the builder's .config()" in e.value.fix and "300GB" in e.value.fix
    assert not (tmp_path / "s").exists()


def test_a_bad_cluster_store_names_its_file_and_a_link_is_one_store(cluster_conf, tmp_path):
    cluster_conf.write_text("spark.sparkpredict.store file://nn/store\n")
    with pytest.raises(StoreError, match="names the host 'nn'") as e:
        resolve_store(None)
    assert f"(spark.sparkpredict.store in {cluster_conf})" in e.value.message
    # --store and --conf naming one folder through a link: one store, not "different stores"
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    got = submit_store(["--conf", f"spark.sparkpredict.store={tmp_path}/link/s", "app.py"], store=f"{tmp_path}/real/s")
    assert got == f"{tmp_path}/real/s"
