"""Awkward job names and store paths, end to end: names with spaces, slashes, quotes, markup,
``..``, Cyrillic and 300 characters; stores under folders with spaces and non-ASCII letters,
relative, as file: URIs. Every name the product takes round-trips exactly; a path it cannot
take is refused up front, before anything is written."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict import registry as R
from sparkpredict import store as store_mod
from sparkpredict.cli import main
from sparkpredict.config import resolve_store
from sparkpredict.errors import StoreError

sys.path.insert(0, str(Path(__file__).parent))
from synthetic_runs import wordcount_history

GB = 2**30
REPO = Path(__file__).resolve().parents[1]
NAMES = ["nightly etl (EU)", "ночной-etl", "sales/daily", "sales_daily", 'a"b', "<script>alert(1)</script>",
         "..", "x" * 300]


def _history(store: Path, names: list[str]) -> None:
    st = store_mod.open(store, create=True)
    tb = wordcount_history([1 * GB, 2 * GB, 4 * GB], [1, 2, 4])
    for i, name in enumerate(names):
        runs, stages, tasks = (tb[t].copy() for t in ("runs", "stages", "tasks"))
        for df in (runs, stages, tasks):
            df["run_id"] = df["run_id"] + f"-{i}"
        runs["app_id"] = runs["app_id"] + f"-{i}"
        runs["job"] = name
        st.append({"runs": runs, "stages": stages, "tasks": tasks})


def test_awkward_names_round_trip_through_advice_retrain_and_report(tmp_path, capsys):
    import sparkpredict

    store = tmp_path / "my stores" / "ünï"
    _history(store, NAMES)
    assert sorted(store_mod.open(store).runs()["job"].unique()) == sorted(NAMES)
    assert main(["retrain", "--store", str(store), "--no-compact"]) == 0
    reg = R.read_registry(store)
    assert sorted(reg["job"].unique()) == sorted(NAMES)
    models = (store / "_models").resolve()
    arts = [(models / a).resolve() for a in reg["artifact"]]
    for a in arts:  # no name escapes the registry, nor makes a file name past 255 bytes
        assert a.is_file() and models in a.parents, a
        assert all(len(part.encode()) <= 255 for part in a.relative_to(models).parts), a
    # "sales/daily" and "sales_daily" slug alike: their files must still differ
    assert len({a.parent for a in arts}) == len(NAMES)
    for name in NAMES:
        advice = sparkpredict.suggest_executors(name, "3GB", store=store)
        assert advice.job == name and "registry" in (advice.model_source or ""), name
    out = tmp_path / "report ü.html"
    assert main(["report", "--store", str(store), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    capsys.readouterr()


def test_a_percent_escaped_file_uri_is_refused_not_a_folder_beside_the_meant_one(tmp_path, capsys):
    """file:///my%20runs (Path.as_uri()) meant "my runs"; the listener (Hadoop's Path) and
    Python made a folder "my%20runs" beside it, and a store given as the plain path was empty."""
    meant = tmp_path / "my runs" / "ünï"
    uri = (tmp_path / "my runs").as_uri() + "/ünï"  # file:///.../my%20runs/ünï
    with pytest.raises(StoreError, match="percent escapes") as info:
        resolve_store(uri)
    assert str(meant) in info.value.fix
    log = REPO / "tests" / "data" / "eventlogs" / "spark4" / "local-1795969295677.zstd"
    assert main(["ingest", str(log), "--store", uri]) == 2
    err = capsys.readouterr().err
    assert "percent escapes" in err and "fix:" in err and "Traceback" not in err
    assert not (tmp_path / "my%20runs").exists() and not meant.exists()
    # the plain path, with its space, works; a folder really named with the escape still opens
    assert main(["ingest", str(log), "--store", str(meant), "--job", "nightly etl (EU)"]) == 0
    assert list(store_mod.open(meant).runs()["job"]) == ["nightly etl (EU)"]
    (tmp_path / "a%20b").mkdir()
    assert resolve_store((tmp_path / "a%20b").as_uri().replace("%2520", "%20")) == str(tmp_path / "a%20b")


def test_a_non_ascii_store_under_the_c_locale_is_refused_before_spark(tmp_path, env_of_spark_defaults):
    """Under LC_ALL=C the JVM names files in ASCII, Python in UTF-8: the listener recorded the
    runs of a store ".../ünï" into a folder ".../?n?", and every reader found no store."""
    from sparkpredict.capture.listener import jvm_path_encoding

    assert jvm_path_encoding({"LC_ALL": "C", "LANG": "C.UTF-8"}) in ("ascii", "utf-8")  # utf-8: macOS
    assert jvm_path_encoding({"LC_ALL": "", "LANG": "en_US.UTF-8"}) == "utf-8"
    store = tmp_path / "my stores" / "ünï"
    env = {**env_of_spark_defaults, "LC_ALL": "C", "PYTHONPATH": str(REPO)}
    script = tmp_path / "job.py"
    script.write_text("print('ran')\n")
    submit = subprocess.run([sys.executable, "-m", "sparkpredict", "submit", "--store", str(store), "--job",
                             "ночной-etl", "--", "--master", "local[1]", str(script)],
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    code = ("import sparkpredict, sys\n"
            "from pyspark.sql import SparkSession\n"
            "from sparkpredict.errors import StoreError\n"
            "try:\n"
            f"    sparkpredict.attach(SparkSession.builder, job='x', store={str(store)!r})\n"
            "except StoreError as e:\n"
            "    print(e.message); sys.exit(2)\n")
    attach = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    if sys.platform == "darwin":
        return
    assert submit.returncode == 2 and "ran" not in submit.stdout, submit.stdout + submit.stderr
    assert "LC_ALL=C.UTF-8" in submit.stderr and "Traceback" not in submit.stderr
    assert attach.returncode == 2 and "ascii" in attach.stdout, attach.stdout + attach.stderr
    assert not (tmp_path / "my stores").exists()


def test_attach_records_an_awkward_name_into_an_awkward_relative_folder(spark_app, tmp_path, monkeypatch,
                                                                       capsys):
    """A real session: attach() with a name of quotes, markup, Cyrillic and 300 characters,
    and a relative store under folders with spaces and non-ASCII letters (made absolute where
    Python reads it); then the name is moved with store edit, and read back exactly."""
    from pyspark.sql import SparkSession

    import sparkpredict

    with spark_app(tmp_path / "warm-up", job="warm-up"):
        pass  # a JVM with the listener's jar: attach() may start the next application in it
    monkeypatch.chdir(tmp_path)
    job = 'ночной etl (EU) "q" <b>/../' + "x" * 300
    rel = os.path.join("my stores", "ünï %41")
    builder = (SparkSession.builder.master("local[2]").appName("my app (with spaces)")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    spark = sparkpredict.attach(builder, job=job, store=rel, compact=False).getOrCreate()
    try:
        assert spark.sparkContext.parallelize(range(100), 2).map(lambda x: (x % 3, 1)).reduceByKey(
            lambda a, b: a + b).count() == 3
    finally:
        spark.stop()
    store = tmp_path / "my stores" / "ünï %41"
    runs = store_mod.open(store).runs()
    assert list(runs["job"]) == [job] and list(runs["app_name"]) == ["my app (with spaces)"]
    assert sorted(os.listdir(tmp_path)) == ["my stores", "warm-up"]  # nothing beside it, escaped
    run_id = runs["run_id"].iloc[0]
    other = "ночной-etl/2"
    assert main(["store", "edit", run_id, "--store", rel, "--job", other]) == 0
    assert list(store_mod.open(store).runs()["job"]) == [other]
    capsys.readouterr()
    assert main(["store", "summary", "--store", str(store), "--json"]) == 0
    assert other in json.dumps(json.loads(capsys.readouterr().out), ensure_ascii=False)


def test_a_non_ascii_store_under_the_c_locale_is_refused_by_sweep_and_the_submit_api(tmp_path, monkeypatch,
                                                                                    capsys):
    """The sweep and the Python submit() start a JVM that names the store's files too: refused
    as the CLI's submit and attach() refuse it, before anything is made or run."""
    from sparkpredict.capture.submit import submit

    if sys.platform == "darwin":
        pytest.skip("the JDK names files in UTF-8 on macOS whatever the locale")
    monkeypatch.setenv("LC_ALL", "C")
    store = tmp_path / "my stores" / "ünï"
    script = tmp_path / "job.py"
    script.write_text("print('ran')\n")
    with pytest.raises(StoreError, match="LC_ALL=C.UTF-8"):
        submit(["--master", "local[1]", str(script)], store=str(store), job="x")
    assert main(["sweep", "--workload", "sort", "--sizes", "1MB", "--executors", "1",
                 "--store", str(store), "--cache", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert "ascii" in err and "LC_ALL=C.UTF-8" in err and "Traceback" not in err
    assert not (tmp_path / "my stores").exists() and not (tmp_path / "cache").exists()


def test_a_non_ascii_jar_cache_under_the_c_locale_is_refused_before_spark(tmp_path, monkeypatch, capsys,
                                                                          env_of_spark_defaults):
    """Under LC_ALL=C with a home (the jar cache's default) or $SPARKPREDICT_CACHE of non-ASCII
    letters, Spark looked for the listener jar at ".../hname2-?/..." and skipped it: attach()'s
    session failed to start with a Py4J traceback (ClassNotFoundException HostMetricsPlugin)."""
    from sparkpredict.capture.listener import check_jar_nameable
    from sparkpredict.capture.submit import submit
    from sparkpredict.errors import ListenerError

    if sys.platform == "darwin":
        pytest.skip("the JDK names files in UTF-8 on macOS whatever the locale")
    cache = tmp_path / "cache ü"
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(cache))
    check_jar_nameable("utf-8")
    with pytest.raises(ListenerError, match="SPARKPREDICT_CACHE to a folder of ASCII letters"):
        check_jar_nameable("ascii")
    store = tmp_path / "store"  # ASCII: only the jar's folder is wrong
    script = tmp_path / "job.py"
    script.write_text("print('ran')\n")
    code = ("import sparkpredict, sys\n"
            "from pyspark.sql import SparkSession\n"
            "from sparkpredict.errors import ListenerError\n"
            "try:\n"
            f"    sparkpredict.attach(SparkSession.builder, job='x', store={str(store)!r})\n"
            "except ListenerError as e:\n"
            "    print(e.message, e.fix); sys.exit(2)\n")
    env = {**env_of_spark_defaults, "LC_ALL": "C", "PYTHONPATH": str(REPO), "SPARKPREDICT_CACHE": str(cache)}
    attach = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert attach.returncode == 2 and "LC_ALL=C.UTF-8" in attach.stdout, attach.stdout + attach.stderr
    monkeypatch.setenv("LC_ALL", "C")
    with pytest.raises(ListenerError, match="LC_ALL=C.UTF-8"):
        submit(["--master", "local[1]", str(script)], store=str(store), job="x")
    assert main(["submit", "--store", str(store), "--job", "x", "--", "--master", "local[1]", str(script)]) == 2
    assert main(["sweep", "--workload", "sort", "--sizes", "1MB", "--executors", "1",
                 "--store", str(store), "--cache", str(tmp_path / "data")]) == 2
    out = capsys.readouterr()
    assert out.err.count("SPARKPREDICT_CACHE to a folder of ASCII") == 2 and "Traceback" not in out.err and "ran" not in out.out
    assert not cache.exists() and not store.exists() and not (tmp_path / "data").exists()


def test_a_job_named_from_an_app_name_with_blanks_is_given_back_and_shown_quoted(tmp_path, capsys):
    """The listener records an app name as the job unchanged (appName("nightly etl ")): store
    edit refused to move another run to that job, and the hints and the summary printed a
    name with a newline across lines and one ending in a space as the name without it."""
    store = tmp_path / "s"
    _history(store, ["nightly etl ", "new\nline", "other"])
    runs = store_mod.open(store).runs()
    moved = runs[runs.job == "other"].run_id.iloc[0]
    capsys.readouterr()
    assert main(["store", "edit", moved, "--store", str(store), "--job", "nightly etl "]) == 0
    assert "job other -> 'nightly etl '" in capsys.readouterr().out
    assert main(["store", "edit", moved, "--store", str(store), "--job", "new\nline"]) == 0
    assert store_mod.open(store).runs().set_index("run_id").loc[moved, "job"] == "new\nline"
    # a new name is still held to the rule: it is typed, not recorded
    assert main(["store", "edit", moved, "--store", str(store), "--job", "fresh "]) == 2
    assert "begins or ends with spaces" in capsys.readouterr().err
    assert main(["suggest", "--job", "nightly etl", "--input-size", "3GB", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "(did you mean 'nightly etl '?)" in err and "'new\\nline'" in err and "new\nline" not in err, err
    assert main(["retrain", "--store", str(store), "--job", "new line", "--no-compact"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'new\\nline'?" in err and "new\nline" not in err, err
    assert main(["store", "summary", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "'nightly etl ' " in out and "'new\\nline' " in out and "new\nline" not in out, out
    assert main(["store", "summary", "--store", str(store), "--json"]) == 0
    assert {j["job"] for j in json.loads(capsys.readouterr().out)["jobs"]} == {"nightly etl ", "new\nline", "other"}


def test_store_summary_cuts_a_300_character_job_name_and_json_keeps_it(tmp_path, capsys):
    store = tmp_path / "s"
    long = "x" * 300
    _history(store, [long, "short"])
    capsys.readouterr()
    assert main(["store", "summary", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) < 150 and "x" * 59 + "… " in out and long not in out, out
    assert main(["store", "summary", "--store", str(store), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert long in {j["job"] for j in summary["jobs"]} and long in {r["job"] for r in summary["latest"]}


def test_an_unknown_jobs_hint_cuts_long_names_and_its_did_you_mean_keeps_the_name(tmp_path, capsys):
    import sparkpredict
    from sparkpredict.errors import UnknownJobError

    store = tmp_path / "s"
    longs = [c * 300 for c in "abc"]
    _history(store, [*longs, "nightly"])
    with pytest.raises(UnknownJobError) as e:
        sparkpredict.suggest_executors("weekly", "3GB", store=store)
    assert len(e.value.fix) < 400 and "a" * 59 + "…" in e.value.fix and longs[0] not in e.value.fix, e.value.fix
    with pytest.raises(UnknownJobError) as e:  # the name meant, whole: the user copies it
        sparkpredict.suggest_executors("a" * 299, "3GB", store=store)
    assert f"did you mean {longs[0]!r}?" in e.value.fix
    capsys.readouterr()
    assert main(["suggest", "--job", "weekly", "--input-size", "3GB", "--store", str(store)]) != 0
    err = capsys.readouterr()
    assert max(map(len, (err.out + err.err).splitlines())) < 450, err


def test_submit_and_predict_list_a_stores_jobs_cut_and_quoted(tmp_path, capsys):
    store = tmp_path / "s"
    _history(store, ["a" * 300, "nightly "])
    capsys.readouterr()
    assert main(["submit", "--executors", "auto", "--input-size", "3GB", "--store", str(store), "--", "x.py"]) != 0
    fix = capsys.readouterr().err
    assert "a" * 59 + "…, 'nightly ')" in fix and "a" * 61 not in fix, fix
    runs, models = tmp_path / "runs.csv", tmp_path / "models"
    assert main(["runs", "--store", str(store), "--out", str(runs)]) == 0
    assert main(["fit", str(runs), "--out", str(models)]) == 0
    query = tmp_path / "q.csv"
    query.write_text("job,input_bytes,executors\nweekly,3GB,2\n")
    capsys.readouterr()
    assert main(["predict", str(models), str(query), "--out", str(tmp_path / "p.csv")]) != 0
    err = capsys.readouterr().err
    # (a runs CSV's names are read without their blanks, with a warning: "nightly" here)
    assert "known jobs: " + "a" * 59 + "…, nightly)" in err and "a" * 61 not in err, err
    assert not (tmp_path / "p.csv").exists()
