"""A second review of `sparkpredict report`, on a copy of the committed history with real event
logs ingested: a sort run without an input size (it removed both of sort's plots), "NDS - Power
Run" with two runs (a page that said "no fitted model" and then quoted the replay's), "Spark
shell" with a failed run (counted as 1 run while `store summary` says 2) and "Databricks Shell"
with only an incomplete run (left out of the report without a word); every note printed twice.

One store and one report (`sparkpredict report` run in-process) serve every test here."""
from __future__ import annotations

import contextlib
import html
import io
import logging
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
HISTORY = DATA / "history"
LOGS = DATA / "eventlogs"
#: a Spark 4 log of a small word count, recorded without an input size, ingested as a sort run
SIZELESS = "local-1795969313432"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """(the report's result, the page, stdout, stderr, warnings logged, what each figure drew:
    (job, figure) -> [(points, legend label)], the store)."""
    import matplotlib.axes

    from sparkpredict import report as report_mod
    from sparkpredict.cli import main

    tmp = tmp_path_factory.mktemp("report_fixes")
    store = tmp / "store"
    shutil.copytree(HISTORY, store)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["ingest", str(LOGS / "spark4" / SIZELESS), "--store", str(store), "--job", "sort"]) == 0
        assert main(["ingest", *(str(LOGS / f) for f in (
            "nds_q72_dataproc_2_2.zstd", "nds_q66_gpu.zstd",  # NDS - Power Run, 2 runs
            "rp_nosql_eventlog.json", "tasks_executors_fail_compressed_eventlog.zstd",  # Spark shell, 1 of 2 ok
            "nds_q88_photon_db_13_3.zstd")),  # Databricks Shell, incomplete
            "--store", str(store)]) == 0

    drawn: dict[tuple[str, str], list[tuple[int, str | None]]] = defaultdict(list)
    current: dict[str, tuple[str, str]] = {}

    def tagged(name, fn):
        def draw(job_runs, *args, **kw):
            current["figure"] = (str(job_runs["job"].iloc[0]), name)
            try:
                return fn(job_runs, *args, **kw)
            finally:
                current.clear()
        return draw

    def recording(method):
        def record(self, x, y, *args, **kw):
            if current:
                drawn[current["figure"]].append((len(x), kw.get("label")))
            return method(self, x, y, *args, **kw)
        return record

    logged: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = logged.append  # type: ignore[method-assign]
    out, err = io.StringIO(), io.StringIO()
    page_path = tmp / "report.html"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_mod, "fig_runtime_vs_executors",
                   tagged("runtime", report_mod.fig_runtime_vs_executors))
        mp.setattr(report_mod, "fig_predicted_vs_actual",
                   tagged("predicted_vs_actual", report_mod.fig_predicted_vs_actual))
        mp.setattr(matplotlib.axes.Axes, "scatter", recording(matplotlib.axes.Axes.scatter))
        mp.setattr(matplotlib.axes.Axes, "errorbar", recording(matplotlib.axes.Axes.errorbar))
        built = []
        real_build = report_mod.build_report
        mp.setattr(report_mod, "build_report", lambda *a, **k: built.append(real_build(*a, **k)) or built[-1])
        logging.getLogger().addHandler(handler)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                assert main(["report", "--store", str(store), "--out", str(page_path)]) == 0
        finally:
            logging.getLogger().removeHandler(handler)
    (res,) = built
    return res, page_path.read_text(), out.getvalue(), err.getvalue(), logged, drawn, store


def _section(res, job):
    return next(s for s in res.sections if s.job == job)


def _section_html(page: str, job: str) -> str:
    from sparkpredict.report import job_anchor

    start = page.index(f"<h2 id='{job_anchor(job)}'")
    end = page.find("<h2 id=", start + 1)
    return page[start:end if end > 0 else len(page)]


def test_a_run_without_an_input_size_leaves_the_plots_of_the_others(report):
    from sparkpredict.features.runs import runs_table

    res, page, _, _, _, drawn, store = report
    sort = _section(res, "sort")
    sized = runs_table(store).query("job == 'sort' and input_bytes > 0")
    assert len(sized) == 24 and SIZELESS not in set(sized["run_id"])
    # both plots, the model's fit too, and no note of a failed query
    assert sort.model_name and {"runtime_vs_executors", "predicted_vs_actual"} <= set(sort.figures), sort.notes
    assert not any("unavailable" in n for n in sort.notes), sort.notes
    # predicted against actual: the 24 runs the model used, one point each
    assert sum(n for n, _ in drawn[("sort", "predicted_vs_actual")]) == 24
    # against executors: those 24 by size, and the sizeless run grey, as "size unknown"
    by_label = defaultdict(int)
    for n, label in drawn[("sort", "runtime")]:
        by_label[label] += n
    assert by_label.pop("size unknown") == 1 and sum(by_label.values()) == 24
    assert len(by_label) == sized["input_bytes"].nunique()
    # the note names the run, why, and the fix
    assert sort.left_out_runs == {SIZELESS: "no input size"}
    (note,) = [n for n in sort.notes if SIZELESS in n]
    assert "1 run recorded no input size" in note
    assert f"`sparkpredict store edit {SIZELESS} --input-size SIZE`" in note
    assert html.escape(note) in _section_html(page, "sort")


def test_a_job_too_small_for_a_model_tells_one_story(report):
    """NDS - Power Run (2 runs): no whole-job model, and the replay that answers instead is named
    as what the advice, the table's error and the slowed-runs check come from."""
    res, page, *_ = report
    nds = _section(res, "NDS - Power Run")
    assert nds.model_name is None and nds.advice_model_name == "replay" and nds.advice_text
    (note,) = [n for n in nds.notes if "model" in n]
    assert note.startswith("no fitted whole-job model for this job (only 2 usable runs (of 2)")
    assert "the plots show the runs only" not in note
    assert ("the advice, the CV MAPE in the jobs table and the runs furthest above the model come from "
            "the replay model instead") in note
    section = _section_html(page, "NDS - Power Run")
    assert "2 runs, no whole-job model, advice from replay</span>" in section
    assert "replay model&#x27;s prediction" in section and html.escape(note) in section


def test_the_jobs_table_counts_runs_as_store_summary_does_and_names_the_jobs_left_out(report):
    from sparkpredict.cli.store_cmd import store_summary

    res, page, out, *_ = report
    per_job, _, _, _ = store_summary(str(report[-1]))
    summary = {r.job: (r.runs, r.succeeded) for r in per_job.itertuples()}
    assert summary["Spark shell"] == (2, 1) and summary["Databricks Shell"] == (1, 0)
    rows = re.findall(r"<a href='#[^']+'>([^<]*)</a></td><td>(\d+)</td><td>(\d+)</td>", page)
    table = {html.unescape(j): (int(n), int(ok)) for j, n, ok in rows}
    assert table == {j: v for j, v in summary.items() if j != "Databricks Shell"}
    assert page.count("<th>runs</th><th>succeeded</th>") == 1
    assert "Spark shell <span class='meta'>2 runs, 1 succeeded" in page
    # the job with no succeeded run: named, with why, on the page and in the command's output
    assert res.left_out_jobs == {"Databricks Shell": "1 run: 1 incomplete"}
    assert len(res.sections) + len(res.left_out_jobs) == len(summary)
    assert ("1 job of the store left out, no succeeded run to plot, fit or advise on: "
            "Databricks Shell (1 run: 1 incomplete)") in page
    assert f"report of {len(res.sections)} jobs (" in out
    assert "left out, no succeeded run: Databricks Shell (1 run: 1 incomplete)" in out


def test_each_note_is_printed_once(report):
    res, _, _, err, logged, *_ = report
    notes = [f"note: {s.job}: {n}" for s in res.sections for n in s.notes]
    assert notes and any(SIZELESS in n for n in notes)
    printed = [line for line in err.splitlines() if line.startswith("note: ")]
    assert printed == notes
    # not a second time as the models' log lines (unfitted jobs, the dropped sizeless run)
    models = [f"{r.name}: {r.getMessage()}" for r in logged if r.name.startswith("sparkpredict.models")]
    assert models == []


def test_the_left_out_note_says_each_reason_with_its_fix():
    from sparkpredict.report import _left_out_note

    note = _left_out_note({"a": "no input size", "b": "no input size", "c": "no executor count"}, fitted=True)
    assert note.startswith("2 runs recorded no input size: a, b; the model and the predicted-vs-actual plot "
                           "leave them out")
    assert "`sparkpredict store edit RUN_ID... --input-size SIZE`" in note
    assert "1 run left out of the model and the plots: c (no executor count)" in note
    assert "`sparkpredict store edit c --exclude`" in note
    one = _left_out_note({"a": "no input size"}, fitted=False)
    assert "1 run recorded no input size: a; no runtime model can use it," in one
    assert "`sparkpredict store edit a --input-size SIZE`" in one


def test_stage_labels_keep_the_call_sites_file_and_line_not_the_paths_head():
    """Labels were cut at 40 characters: two stages of one script, `collect at /opt/etl/...`,
    read the same in the figure, their file and line cut off."""
    from sparkpredict.report_figures import short_stage_name

    long_site = "collect at /opt/company/etl/jobs/nightly/transformations/sessionize.py:142"
    assert short_stage_name(long_site) == "collect at sessionize.py:142"
    assert short_stage_name("showString at NativeMethodAccessorImpl.java:0") == \
        "showString at NativeMethodAccessorImpl.java:0"
    assert short_stage_name("save at  \n Command-12:4") == "save at Command-12:4"
    # a name still too long loses its middle: both ends are kept, the limit held
    name = "mapPartitionsWithIndexInternal_" + "x" * 80 + "_end at Stage.scala:9"
    got = short_stage_name(name)
    assert len(got) == 48 and got.startswith("mapPartitionsWithIndex") and got.endswith("Stage.scala:9")
    assert "…" in got
    assert short_stage_name(None) == "None" and short_stage_name(7) == "7"


def test_stage_names_with_dollars_are_drawn_as_written_not_as_math():
    """matplotlib read ``$...$`` as math: Scala's ``$anonfun$...$1`` came out italic with its
    dollars gone, and a name whose dollars hold no valid math failed the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from sparkpredict.report_figures import fig_stages

    run = pd.Series({"start_ms": 0, "wall_ms": 2000, "run_id": "app-1", "input_bytes": 10,
                     "executors_requested": 1})
    for name in ("$anonfun$withThreadLocalCaptured$1 at CompletableFuture.java:1768",
                 "map at $a^$ b", "x $\\undefinedcmd$ y"):
        st = pd.DataFrame([{"stage_id": 0, "name": name, "num_tasks": 2, "submission_ms": 1000,
                            "duration_ms": 500, "shuffle_read_bytes": 0, "shuffle_write_bytes": 0}])
        png = fig_stages(st, run)
        assert len(png) > 1000  # a base64 PNG, no parse error
    assert matplotlib.rcParams["text.parse_math"] is True  # the caller's setting is left alone


def test_a_stage_without_its_task_count_is_drawn_without_it():
    """A stage row appended through the store API without num_tasks (NaN) failed the whole
    timeline with a bare "cannot convert float NaN to integer"."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from sparkpredict.report_figures import fig_stages

    run = pd.Series({"start_ms": 0, "wall_ms": 2000, "run_id": "app-1", "input_bytes": 10,
                     "executors_requested": 1})
    st = pd.DataFrame([{"stage_id": 0, "name": "count at job.py:3", "num_tasks": float("nan"),
                        "submission_ms": 1000, "duration_ms": 500},
                       {"stage_id": 1, "name": "save at job.py:4", "num_tasks": 4,
                        "submission_ms": 1500, "duration_ms": 300}])
    assert len(fig_stages(st, run)) > 1000


def test_the_report_api_reads_one_job_name_and_refuses_a_bad_advice_factor(tmp_path):
    """build_report(jobs="sort") answered "no succeeded runs of job(s) s, o, r, t", and an
    advice_factor of 0 or NaN gave every job the false note that its runs recorded no size."""
    from sparkpredict.errors import InputError
    from sparkpredict.report import build_report

    res = build_report(tmp_path / "r.html", store=HISTORY, jobs="sort")
    assert [s.job for s in res.sections] == ["sort"]
    for bad in (0, -1.0, float("nan"), "2"):
        with pytest.raises(InputError, match="advice_factor must be a positive number"):
            build_report(tmp_path / "x.html", store=HISTORY, advice_factor=bad)
    assert not (tmp_path / "x.html").exists()
    with pytest.raises(InputError, match=r"no succeeded runs of job\(s\) 'nope' in .*choose among: 'sort'"):
        build_report(tmp_path / "x.html", store=HISTORY, jobs=["nope"])


def test_a_run_excluded_from_training_is_counted_as_excluded_not_as_failed(tmp_path):
    """The report read "24 runs, 23 succeeded" of a job with one run excluded, as if it failed."""
    from sparkpredict.report import build_report
    from sparkpredict.store import edit_runs
    from sparkpredict.store import open as open_store

    store = tmp_path / "store"
    shutil.copytree(HISTORY, store)
    runs = open_store(store).runs()
    first = runs[runs.job == "sqljoin"].run_id.iloc[0]
    edit_runs(str(store), [first], excluded=True)
    res = build_report(tmp_path / "r.html", store=store, jobs=["sqljoin"])
    (sec,) = res.sections
    n = int((runs.job == "sqljoin").sum())
    assert (sec.n_recorded, sec.n_runs, sec.n_excluded) == (n, n - 1, 1)
    assert (f"{n} runs, {n - 1} succeeded, 1 excluded from training (sparkpredict store edit RUN_ID "
            "--include takes one back)") in res.path.read_text()
