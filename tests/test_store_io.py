import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpredict import store
from sparkpredict.errors import StoreError
from sparkpredict.store import schema as S


def _batch(run_id, updated_ms=1, status="succeeded", n_stages=2):
    return {
        "runs": pd.DataFrame({"run_id": [run_id], "job": ["j"], "status": [status],
                              "start_ms": [1000], "updated_ms": [updated_ms]}),
        "stages": pd.DataFrame({"run_id": [run_id] * n_stages, "stage_id": range(n_stages)}),
    }


def test_roundtrip_and_latest_run_row_wins(tmp_path):
    s = store.open(tmp_path / "st", create=True)
    s.append(_batch("app-1", updated_ms=1, status="running", n_stages=2))
    s.append(_batch("app-1", updated_ms=2, status="succeeded", n_stages=3))
    runs = s.runs()
    assert list(runs.run_id) == ["app-1"] and runs.status.iloc[0] == "succeeded"
    assert len(s.stages()) == 5  # incremental batches add stages
    assert list(s.stages().columns) == S.TABLES["stages"].names


def test_uncommitted_batch_is_invisible(tmp_path):
    s = store.open(tmp_path / "st", create=True)
    s.append(_batch("app-1"))
    # A writer that died after its stage file but before its runs file (the commit mark):
    (tmp_path / "st" / "stages" ).mkdir(exist_ok=True)
    pq.write_table(S.conform("stages", pa.table({"run_id": ["ghost"], "stage_id": pa.array([9], pa.int32())})),
                   tmp_path / "st" / "stages" / "part-999-dead.parquet")
    assert set(s.stages().run_id) == {"app-1"}


def test_missing_store_names_the_fix(tmp_path):
    with pytest.raises(StoreError) as e:
        store.open(tmp_path / "nothing")
    assert "record a run first" in e.value.fix and "store= from Python" in e.value.fix


def test_foreign_folder_refused_and_untouched(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreError) as e:
        store.open(tmp_path, create=True)
    assert "not a sparkpredict store" in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_unknown_schema_version_refused(tmp_path):
    store.open(tmp_path / "st", create=True)
    (tmp_path / "st" / S.MARKER_FILE).write_text(json.dumps({"format": S.STORE_FORMAT, "schema_version": 99}))
    with pytest.raises(StoreError) as e:
        store.open(tmp_path / "st")
    assert "schema version 99, newer than" in str(e.value) and "upgrade sparkpredict" in e.value.fix


@pytest.mark.parametrize("meta,said", [
    ({"format": "other", "schema_version": 1}, "is not a sparkpredict store: its _sparkpredict_store.json says format 'other'"),
    (["not", "an", "object"], "is not a sparkpredict store"),
    ({"format": S.STORE_FORMAT, "schema_version": 0}, "damaged: schema_version 0 is not a version"),
    ({"format": S.STORE_FORMAT, "schema_version": "1"}, "damaged: schema_version '1' is not a version"),
    ({"format": S.STORE_FORMAT}, "damaged: schema_version None"),
])
def test_a_marker_that_is_not_ours_or_damaged_is_told_apart_from_a_newer_store(tmp_path, meta, said):
    # each case its own message: "has schema version 1; this sparkpredict reads version 1" said nothing
    store.open(tmp_path / "st", create=True)
    (tmp_path / "st" / S.MARKER_FILE).write_text(json.dumps(meta))
    with pytest.raises(StoreError) as e:
        store.open(tmp_path / "st")
    assert said in e.value.message and "upgrade" not in e.value.fix
    assert '{"format": "sparkpredict-store", "schema_version": 1}' in e.value.fix


def test_unwritable_store(tmp_path):
    # Runs as root in CI, so permissions cannot make a folder unwritable; a file in the way can.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(StoreError) as e:
        store.open(blocker / "st", create=True)
    assert e.value.fix
    assert blocker.read_text() == "x"


def test_schema_rejects_unknown_columns():
    with pytest.raises(ValueError):
        S.conform("runs", pa.table({"run_id": ["a"], "bogus": [1]}))


def test_clean_removes_only_old_uncommitted_files_and_plain_readers_then_see_committed_rows(tmp_path, capsys):
    import os
    import time

    import pyarrow.dataset as ds

    from sparkpredict.cli import main

    root = tmp_path / "st"
    s = store.open(root, create=True)
    s.append(_batch("app-1"))
    committed_before = s.stages(form="arrow")
    ghost = S.conform("stages", pa.table({"run_id": ["ghost"], "stage_id": pa.array([9], pa.int32())}))
    dead = root / "stages" / "part-999-dead.parquet"          # a writer died between its renames
    tmp_left = root / "tasks" / ".part-998-dead.parquet.tmp"  # ... or before them
    fresh = root / "stages" / "part-997-writing.parquet"      # a writer mid-commit right now
    (root / "tasks").mkdir(exist_ok=True)
    for p in (dead, fresh):
        pq.write_table(ghost, p)
    tmp_left.write_bytes(b"partial")
    hour_ago = time.time() - 3600
    for p in (dead, tmp_left):
        os.utime(p, (hour_ago, hour_ago))
    assert "ghost" in set(ds.dataset(root / "stages").to_table()["run_id"].to_pylist())  # what Spark would read

    assert main(["store", "clean", "--store", str(root), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove 2 uncommitted file(s)" in out and dead.name in out and tmp_left.name in out
    assert dead.exists() and tmp_left.exists()

    assert main(["store", "clean", "--store", str(root)]) == 0
    assert "removed 2 uncommitted file(s)" in capsys.readouterr().out
    assert not dead.exists() and not tmp_left.exists() and fresh.exists()  # the young one is left alone
    assert s.stages(form="arrow").equals(committed_before)  # committed rows untouched
    assert s.remove_orphans(min_age_s=0.0) == [str(fresh)]
    assert set(ds.dataset(root / "stages").to_table()["run_id"].to_pylist()) == {"app-1"}

    assert main(["store", "clean", "--store", str(root), "--older-than", "soon"]) != 0
    assert "cannot read 'soon' as a duration" in capsys.readouterr().err


def test_cli_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """`sparkpredict store summary | head -1`: the reader leaves early; no traceback follows."""
    import subprocess
    import sys

    s = store.open(tmp_path / "st", create=True)
    n = 3000  # ~250 KB of listing, more than a pipe buffer holds
    s.append({"runs": pd.DataFrame({"run_id": [f"app-{i:05d}" for i in range(n)], "job": ["j"] * n,
                                    "status": ["succeeded"] * n, "start_ms": range(n),
                                    "updated_ms": [1] * n})})
    p = subprocess.Popen([sys.executable, "-m", "sparkpredict", "store", "summary", "--store",
                          str(tmp_path / "st"), "--last", str(n)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"store ")
    p.stdout.close()
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait(timeout=60) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_summary_columns_stay_aligned_with_long_yarn_ids_and_app_names(tmp_path, capsys):
    from sparkpredict.cli import main

    s = store.open(tmp_path / "st", create=True)
    ids = ["application_1603128018386_7756", "app-1", "local-1532512550423"]
    jobs = ["NDS - Power Run on a long name", "etl", "Spark shell"]
    s.append({"runs": pd.DataFrame({"run_id": ids, "job": jobs, "status": ["succeeded"] * 3,
                                    "start_ms": [1, 2, 3], "updated_ms": [1] * 3, "wall_ms": [1000.0] * 3,
                                    "executors_max": [2.0] * 3, "num_tasks": [8.0] * 3})})
    assert main(["store", "summary", "--store", str(tmp_path / "st")]) == 0
    lines = capsys.readouterr().out.splitlines()
    listing = lines[lines.index("latest 3 runs:") + 1:]
    assert len(listing) == 4
    # every row's job starts where the header's does, and its status column too
    col_job, col_status = listing[0].index("job"), listing[0].index("status")
    for line, rid, job in zip(listing[1:], ids, jobs):
        assert line.startswith(rid) and line[col_job:].startswith(job)
        assert line[col_status:].startswith("succeeded")


def test_summary_lists_input_and_executors_as_the_models_read_them(tmp_path, capsys):
    """A local[3] run of a sweep asked for 3 executors: one JVM holds them, so executors_max is
    1; the listing shows the 3 the models use, beside the input size (and a dynamic-allocation
    run's mean)."""
    from sparkpredict.cli import main

    s = store.open(tmp_path / "st", create=True)
    dyn = '{"spark.dynamicAllocation.enabled": "true"}'
    s.append({"runs": pd.DataFrame({"run_id": ["local-1", "app-2", "app-3"], "job": ["wc"] * 3,
                                    "status": ["succeeded"] * 3, "start_ms": [1, 2, 3], "updated_ms": [1] * 3,
                                    "wall_ms": [2000.0, 3000.0, 4000.0], "executors_requested": [3.0, None, 2.0],
                                    "executors_max": [1.0, 4.0, 7.0], "executors_mean": [0.9, 3.9, 2.43],
                                    "master": ["local[3]", "yarn", "yarn"], "task_slots": [3.0, 8.0, 14.0],
                                    "properties_json": ["{}", "{}", dyn],
                                    "input_bytes": [8 * 2**20, None, 2**30], "num_tasks": [34.0, 8.0, 9.0]})})
    assert main(["store", "summary", "--store", str(tmp_path / "st")]) == 0
    lines = capsys.readouterr().out.splitlines()
    head, first, second, third, note = lines[lines.index("latest 3 runs:") + 1:]
    assert note.startswith("executors as the models read them: local[N] as N one-core executors")
    assert head.split() == ["run_id", "job", "status", "input", "executors", "wall", "tasks"]
    assert first.split() == ["local-1", "wc", "succeeded", "8", "MiB", "3", "2.0s", "34"]
    assert second.split() == ["app-2", "wc", "succeeded", "-", "4", "3.0s", "8"]
    # dynamic allocation: the mean it held, not the initial 2 or the most, 7
    assert third.split() == ["app-3", "wc", "succeeded", "1", "GiB", "2.43", "4.0s", "9"]


def test_summary_last_must_list_at_least_one_run(tmp_path, capsys):
    """--last 0 crashed on an empty listing; --last=-3 listed all but three runs (pandas' tail)."""
    from sparkpredict.cli import main

    s = store.open(tmp_path / "st", create=True)
    s.append({"runs": pd.DataFrame({"run_id": [f"app-{i}" for i in range(5)], "job": ["j"] * 5,
                                    "status": ["succeeded"] * 5, "start_ms": range(5), "updated_ms": [1] * 5})})
    for bad in ("0", "-3"):
        assert main(["store", "summary", "--store", str(tmp_path / "st"), f"--last={bad}"]) == 2
        cap = capsys.readouterr()
        assert cap.out == "" and f"error: --last {bad}: the number of latest runs to list must be at least 1" in cap.err
        assert "fix: give --last 1 or more" in cap.err
    assert main(["store", "summary", "--store", str(tmp_path / "st"), "--last", "1"]) == 0
    out = capsys.readouterr().out
    assert "latest 1 run:" in out and out.rstrip().splitlines()[-1].startswith("app-4")


def test_clean_older_than_zero_takes_every_uncommitted_file(tmp_path, capsys):
    """`--older-than 0` (or 0s, 0m): every uncommitted file, however young; no negative ages."""
    from sparkpredict.cli import main

    root = tmp_path / "st"
    s = store.open(root, create=True)
    s.append(_batch("app-1"))
    ghost = S.conform("stages", pa.table({"run_id": ["ghost"], "stage_id": pa.array([9], pa.int32())}))
    fresh = root / "stages" / "part-997-writing.parquet"
    pq.write_table(ghost, fresh)
    for zero in ("0", "0s", "0.0m"):
        assert main(["store", "clean", "--store", str(root), "--older-than", zero, "--dry-run"]) == 0
        assert "would remove 1 uncommitted file(s)" in capsys.readouterr().out
    assert main(["store", "clean", "--store", str(root), "--older-than", "0"]) == 0
    assert "removed 1 uncommitted file(s)" in capsys.readouterr().out and not fresh.exists()
    assert set(s.stages()["run_id"]) == {"app-1"}
    for bad, said in (("-1m", "'-1m' is negative"), ("0x", "cannot read '0x' as a duration")):
        assert main(["store", "clean", "--store", str(root), f"--older-than={bad}"]) == 2
        err = capsys.readouterr().err
        assert f"error: --older-than: {said}" in err and "or 0 for every uncommitted file" in err


def _summary_store(root):
    s = store.open(root, create=True)
    s.append({"runs": pd.DataFrame({
        "run_id": ["wc-ok", "wc-cancelled", "sort-1", "never-1"],
        "job": ["wordcount", "wordcount", "sort", "never"],
        "status": ["succeeded", "failed", "succeeded", "failed"],
        "start_ms": [1000, 2000, 3000, 4000], "updated_ms": [1] * 4,
        "wall_ms": [6800.0, 1800.0, 4000.0, 900.0],
        # a --sizes 2MB sweep generates 2 MB less a part line; another job's input is 2 MB exactly
        "input_bytes": [1_999_950, 1_999_950, 2_000_000, None],
        "executors_requested": [2.0, 2.0, 1.0, 1.0], "num_tasks": [8.0, 3.0, 4.0, None]})})
    return s


def test_summary_median_wall_is_of_succeeded_runs_and_sizes_share_one_unit(tmp_path, capsys):
    """A Ctrl-C'd sweep's cancelled 1.8 s run pulled the median to 4.3 s beside a 6.8 s one; a
    generated 2 MB read 1.9 MiB beside another job's 2 MB in the same column."""
    from sparkpredict.cli import main

    _summary_store(tmp_path / "st")
    assert main(["store", "summary", "--store", str(tmp_path / "st")]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[2]
    assert "median wall (succeeded)" in head
    rows = {ln.split()[0]: ln.split() for ln in lines[3:6]}
    assert rows["wordcount"][:4] == ["wordcount", "2", "1", "6.8s"]
    assert rows["sort"][:4] == ["sort", "1", "1", "4.0s"]
    assert rows["never"][:4] == ["never", "1", "0", "-"]  # no succeeded run: no runtime
    for ln in lines[3:6]:  # the wider header keeps the columns aligned
        assert ln[head.index("last start (UTC)"):].startswith("1970-01-01 00:00")
    listing = {ln.split()[0]: ln.split() for ln in lines[lines.index("latest 4 runs:") + 2:]}
    assert listing["wc-ok"][3:5] == ["2.00", "MB"] and listing["wc-cancelled"][3:5] == ["2.00", "MB"]
    assert listing["sort-1"][3:5] == ["2", "MB"] and listing["never-1"][3] == "-"


def test_summary_json_gives_the_same_data_in_base_units(tmp_path, capsys):
    from sparkpredict.cli import main

    _summary_store(tmp_path / "st")
    assert main(["store", "summary", "--store", str(tmp_path / "st"), "--json", "--last", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["store"] == str(tmp_path / "st") and doc["runs"] == 4
    jobs = {j["job"]: j for j in doc["jobs"]}
    assert jobs["wordcount"] == {"job": "wordcount", "runs": 2, "runs_by_status": {"failed": 1, "succeeded": 1},
                                 "median_wall_ms": 6800, "input_bytes_min": 1_999_950,
                                 "input_bytes_max": 1_999_950, "last_start_ms": 2000}
    assert jobs["never"]["median_wall_ms"] is None and jobs["never"]["input_bytes_min"] is None
    assert jobs["never"]["runs_by_status"] == {"failed": 1}
    assert [r["run_id"] for r in doc["latest"]] == ["sort-1", "never-1"]
    assert doc["latest"][0] == {"run_id": "sort-1", "job": "sort", "status": "succeeded", "start_ms": 3000,
                                "input_bytes": 2_000_000, "executors": 1, "wall_ms": 4000, "num_tasks": 4}
    assert doc["latest"][1]["input_bytes"] is None and doc["latest"][1]["num_tasks"] is None
    # an empty store, and a mistake: JSON on stdout still (the error as {error, fix})
    store.open(tmp_path / "empty", create=True)
    assert main(["store", "summary", "--store", str(tmp_path / "empty"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"store": str(tmp_path / "empty"), "runs": 0,
                                                   "jobs": [], "latest": [], "excluded": [], "lost": []}
    assert main(["store", "summary", "--store", str(tmp_path / "st"), "--json", "--last", "0"]) == 2
    cap = capsys.readouterr()
    assert json.loads(cap.out) == {"error": "--last 0: the number of latest runs to list must be at least 1",
                                   "fix": "give --last 1 or more (default 10)"}
    assert "error: --last 0" in cap.err and "usage:" not in cap.err
