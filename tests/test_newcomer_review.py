"""What a newcomer with a nightly PySpark job of their own met, following the README: the
script calls ``sparkpredict.attach(SparkSession.builder)`` as "Using it" shows, and is run by
``sparkpredict submit --store S --job J --input-size SIZE`` (or ``--executors auto``)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from sparkpredict import store as store_mod

ATTACHED_BARE = """
import sparkpredict
from pyspark.sql import SparkSession
spark = sparkpredict.attach(SparkSession.builder.appName("nightly sales rollup")
                            .config("spark.ui.enabled", "false")).getOrCreate()
assert spark.range(100).count() == 100
spark.stop()
"""


@pytest.mark.spark
def test_attach_under_submit_keeps_the_store_job_and_size_submit_was_given(listener_jar, tmp_path,
                                                                           env_of_spark_defaults):
    """attach() without store/job/input_bytes in a script that spark-submit runs set the default
    store, the app name and no declared size over what `sparkpredict submit` was given: the run
    went into ~/.sparkpredict/store as job 'nightly sales rollup' with its measured input, and
    submit said "no run was recorded in S" (and `--executors auto` advised a job the run then
    never joined)."""
    home = tmp_path / "home"
    home.mkdir()
    env = dict(env_of_spark_defaults, PYSPARK_PYTHON=sys.executable, HOME=str(home))
    env.pop("SPARKPREDICT_STORE", None)
    script = tmp_path / "nightly.py"
    script.write_text(ATTACHED_BARE)
    st = tmp_path / "history"
    r = subprocess.run([sys.executable, "-m", "sparkpredict", "submit", "--store", str(st),
                        "--job", "nightly-sales", "--input-size", "5MB", "--no-compact", "--",
                        "--master", "local[1]", str(script)],
                       capture_output=True, text=True, timeout=300, env=env, check=False)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "recorded local-" in r.stderr and "no run was recorded" not in r.stderr, r.stderr[-3000:]
    runs = store_mod.open(st).runs()
    assert list(runs["job"]) == ["nightly-sales"] and list(runs["status"]) == ["succeeded"]
    assert list(runs["input_bytes"]) == [5_000_000]
    assert list(runs["input_bytes_source"]) == ["declared"]
    assert not (home / ".sparkpredict" / "store").exists()


def _store_with_a_run_of(path, job):
    """A store holding one succeeded run of ``job`` (its runs row: enough to be listed)."""
    import pandas as pd

    st = store_mod.open(path, create=True)
    row = {"run_id": "local-1", "app_id": "local-1", "job": job, "status": "succeeded", "start_ms": 1,
           "end_ms": 2001, "wall_ms": 2000, "input_bytes": 5_000_000}
    st.append({"runs": pd.DataFrame([row])})
    return str(path)


def test_asking_before_any_run_names_attach(tmp_path, capsys):
    """A newcomer who ran the job without attach() and asks: the fix named demo, submit and
    ingest, not attach(), the way README's "Using it" records a Python job."""
    from sparkpredict.cli import main

    rc = main(["suggest", "--job", "nightly-sales", "--input-size", "2GB", "--store", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert rc == 2 and "error: no sparkpredict store at" in err, err
    assert "fix: record a run first (sparkpredict.attach() in the job's driver, sparkpredict submit, demo or ingest)" \
        in err, err
    assert "Traceback" not in err


def test_a_job_never_recorded_is_told_apart_from_a_typo(tmp_path, capsys):
    """A store holding other jobs, asked of a job that ran without the listener: the fix only
    listed the other jobs, as if the name were mistyped."""
    from sparkpredict.cli import main

    path = _store_with_a_run_of(tmp_path / "s", "orders-etl")
    rc = main(["suggest", "--job", "nightly-sales", "--input-size", "2GB", "--store", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "error: no job 'nightly-sales' in store" in err, err
    assert ("fix: use one of: orders-etl; if 'nightly-sales' ran, it was not recorded: attach the listener to it "
            "(sparkpredict.attach(builder, job='nightly-sales') in its driver, or sparkpredict submit "
            "--job nightly-sales)") in err, err
    # a typo is still a typo, without the note
    rc = main(["suggest", "--job", "orders-etI", "--input-size", "2GB", "--store", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "fix: use one of: orders-etl (did you mean 'orders-etl'?)\n" in err, err


def test_submit_help_says_which_store_it_records_into(capsys):
    """`submit --help` said the default store was "the embedded local store", while submit records
    into $SPARKPREDICT_STORE (or a spark.sparkpredict.store it is given) like every command."""
    from sparkpredict.cli import main

    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "embedded local store" not in out
    assert "else $SPARKPREDICT_STORE, else ~/.sparkpredict/store" in out, out


@pytest.mark.parametrize("words, stray", [(["--input-size", "2", "GB"], "GB"),
                                          (["--input-size", "2GB", "--deadline", "1h", "30m"], "30m"),
                                          (["--input-size", "2GB", "--deadline", "5", "min"], "min")])
def test_a_size_or_duration_typed_with_a_space_is_named(words, stray, capsys):
    """`--input-size 2 GB` unquoted: suggest said only "unrecognized arguments: GB" and "see
    --help", and submit took GB for the application ("the application 'GB' is not a file here";
    `--deadline 1h 30m` ran the advice for 1h first)."""
    from sparkpredict.cli import main

    with pytest.raises(SystemExit) as e:
        main(["suggest", "--job", "nightly-sales", *words])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"error: unrecognized arguments: {stray}" in err, err
    assert "fix: a size or duration is one word: write it without the space (2GB, 1h30m), or quote it " \
           "('2 GB', '1h 30m')" in err, err

    rc = main(["submit", "--job", "nightly-sales", "--executors", "auto", *words, "--dry-run", "--", "job.py"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"error: {stray!r} follows submit's options, before -- and spark-submit's arguments: a size or " \
           "duration typed with a space" in err, err
    assert "fix: write it as one word without the space (2GB, 1h30m), or quote it ('2 GB', '1h 30m')" in err
    assert "is not a file here" not in err and "advice:" not in err and "Traceback" not in err


def test_other_stray_words_keep_the_plain_fix(capsys):
    from sparkpredict.cli import main

    with pytest.raises(SystemExit):
        main(["suggest", "--job", "j", "--input-size", "2GB", "extra.py"])
    err = capsys.readouterr().err
    assert "fix: see `sparkpredict suggest --help`" in err and "one word" not in err, err


@pytest.mark.parametrize("words", [["--master", "yarn"], ["--num-executors", "2"], ["--executor-memory", "4g"],
                                   ["--conf", "spark.x=1"], ["--supervise"]])
def test_a_spark_submit_option_before_the_dashes_is_told_to_go_after_them(words, capsys):
    """`submit --executors 2 --master yarn job.py`: the fix was only "see --help", and for
    --num-executors "did you mean --executors?", an option already given."""
    from sparkpredict.cli import main

    with pytest.raises(SystemExit) as e:
        main(["submit", "--executors", "2", *words, "job.py"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and err[-2] == f"sparkpredict submit: error: unrecognized arguments: {words[0]}", err
    assert err[-1] == (f"fix: {words[0]} is spark-submit's option: give it after --, with the script, as in "
                       f"`sparkpredict submit [options] -- {words[0]} ... job.py`; see `sparkpredict submit --help`")
    # sparkpredict's own options misspelt keep their "did you mean"
    with pytest.raises(SystemExit):
        main(["submit", "--jobs", "x", "--", "job.py"])
    assert "fix: did you mean --job? see `sparkpredict submit --help`" in capsys.readouterr().err


def test_a_store_given_by_its_parent_folder_is_named(tmp_path, capsys):
    """`--store ~/.sparkpredict` for `~/.sparkpredict/store`: readers said only that the folder
    "holds other files (store)", and submit and attach() told to point --store "at an empty or new
    folder", a fresh store beside the history."""
    from sparkpredict.capture.listener import check_store
    from sparkpredict.cli import main
    from sparkpredict.errors import StoreError

    inner = _store_with_a_run_of(tmp_path / "sp" / "store", "nightly-sales")
    parent = str(tmp_path / "sp")
    rc = main(["suggest", "--job", "nightly-sales", "--input-size", "2GB", "--store", parent])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: folder '{parent}' is not a sparkpredict store: it holds other files (store)" in err
    assert f"; it holds the store '{inner}': give that one\n" in err, err

    rc = main(["submit", "--store", parent, "--job", "nightly-sales", "--executors", "1", "--dry-run", "--",
               "--master", "local[1]", "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and ("fix: give the store's folder (--store, spark.sparkpredict.store; store= from Python), or an "
                        f"empty or new folder for a new store; it holds the store '{inner}': give that one") in err, err
    with pytest.raises(StoreError) as e:
        check_store(parent)
    assert e.value.fix.endswith(f"it holds the store '{inner}': give that one")
    with pytest.raises(StoreError) as e:  # the Python writers (ingest, edit) refuse it alike
        store_mod.open(parent, create=True)
    assert e.value.fix.startswith("give the store's folder") and inner in e.value.fix, e.value.fix
    # a folder of other files alone keeps the plain fix
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "etl.py").write_text("")
    with pytest.raises(StoreError) as e:
        check_store(str(tmp_path / "proj"))
    assert "it holds the store" not in e.value.fix and "empty or new folder" in e.value.fix
