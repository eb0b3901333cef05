"""The HTML report on the committed history: plots embedded, advice shown, graceful when parts are missing."""
from __future__ import annotations

import base64
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict.errors import InputError, StoreError

HISTORY = Path(__file__).parent / "data" / "history"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def history_report(tmp_path_factory):
    from sparkpredict.report import build_report

    out = tmp_path_factory.mktemp("report") / "report.html"
    return build_report(out, store=HISTORY)



def _advice_text(a) -> str:
    """The report's advice as `suggest` prints it under its table: the objective and summary,
    then the knee, the dynamic-allocation bounds and where it extrapolates."""
    from sparkpredict.advice import context_lines

    return "\n".join([f"objective {a.objective}: {a.summary()}", *context_lines(a)])

def _images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)]


def test_history_report_has_every_plot_and_advice(history_report):
    from sparkpredict.store import io as store_io

    res = history_report
    jobs = set(store_io.open(HISTORY).runs()["job"])
    assert set(res.jobs) == jobs and len(jobs) >= 2
    page = res.path.read_text()
    imgs = _images(page)
    assert len(imgs) == sum(len(s.figures) for s in res.sections) >= 2 * len(jobs)
    assert all(i.startswith(PNG_MAGIC) and len(i) > 5000 for i in imgs)
    fitted = [s for s in res.sections if s.model_name]
    assert fitted, [s.notes for s in res.sections]  # wordcount's full grid always fits
    for s in res.sections:
        assert {"runtime_vs_executors", "stages"} <= set(s.figures), s.notes
        assert f"id='job-{s.job}'" in page
        if s.model_name:
            assert "predicted_vs_actual" in s.figures
            assert s.advice_text and f"{s.job} on " in s.advice_text and "<table" in s.advice_table_html
            # the heading says which input the advice is for (the demo asks at 4x, the report at 2x)
            assert s.advice_for.endswith(", 2x the largest recorded input")
            assert f"<h3>Current advice for {s.advice_for}</h3>" in page
            # the candidates as `suggest` prints them: human units, the choice marked once
            t = s.advice_table_html
            assert t.count("<tr class='chosen'>") == 1 and "90% interval" in t and "executor-h" in t
            assert "None" not in t and "predicted_runtime_s" not in t and re.search(r"<td>[0-9.]+s - ", t)
        else:  # too few runs for a model (the partial sort sweep): said on the page, not a failure
            assert any("no fitted whole-job model" in n for n in s.notes)
    # every section has its slowed-runs part: the runs, or why there are none
    assert page.count("<h3>Runs furthest above the model</h3>") == len(res.sections)
    for s in res.sections:
        assert s.slow_runs or (s.slow_runs_absent and html.escape(s.slow_runs_absent) in page), s.job
    # self-contained: nothing fetched from elsewhere
    assert not re.search(r"(src|href)=['\"]https?:", page)


def test_history_report_lists_the_runs_explain_job_names(history_report):
    """wordcount's runs furthest above its model, as `explain --job` ranks them (out of fold),
    with their size, executors and runtime as recorded."""
    from sparkpredict.advice_source import HistorySource
    from sparkpredict.features.runs import runs_table

    wc = next(s for s in history_report.sections if s.job == "wordcount")
    expected = HistorySource.resolve("wordcount", store=HISTORY).runs_above_model(k=3, min_ratio=1.25)
    assert len(expected) == 3
    assert [(r, q) for r, _, _, _, q in wc.slow_runs] == [(r, pytest.approx(q)) for r, q in expected]
    runs = runs_table(HISTORY).set_index("run_id")
    for r, size, execs, runtime, _ in wc.slow_runs:
        assert (size, execs, runtime) == tuple(runs.loc[r, ["input_bytes", "executors", "runtime_s"]])
    page = history_report.path.read_text()
    assert "Runs furthest above the model" in page and f"<code>{wc.slow_runs[0][0]}</code>" in page
    assert f"{wc.slow_runs[0][4]:.2f}x" in page


def test_report_cli_one_job(tmp_path):
    out = tmp_path / "sort.html"
    r = subprocess.run([sys.executable, "-m", "sparkpredict", "report", "--store", str(HISTORY),
                        "--job", "sort", "--out", str(out)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ), check=False)
    assert r.returncode == 0, r.stderr
    assert "report of 1 job (sort)" in r.stdout and str(out) in r.stdout
    page = out.read_text()
    assert "id='job-sort'" in page and "id='job-wordcount'" not in page


def test_unknown_job_and_missing_store_are_clear_errors(tmp_path):
    from sparkpredict.report import build_report

    with pytest.raises(InputError, match="no succeeded runs of job"):
        build_report(tmp_path / "r.html", store=HISTORY, jobs=["nope"])
    with pytest.raises(StoreError, match="no sparkpredict store"):
        build_report(tmp_path / "r.html", store=tmp_path / "nothing-here")
    assert not (tmp_path / "r.html").exists()
    r = subprocess.run([sys.executable, "-m", "sparkpredict", "report", "--store", str(tmp_path / "none"),
                        "--out", str(tmp_path / "x.html")], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2 and "error: no sparkpredict store" in r.stderr and "Traceback" not in r.stderr


def test_missing_pieces_degrade_to_notes(tmp_path):
    """Two runs without stage rows: no model, no stage plot, no advice; the page still shows the runs."""
    from sparkpredict.report import build_report
    from sparkpredict.store import io as store_io

    runs = store_io.open(HISTORY).runs()
    few = runs[(runs["job"] == "sort") & (runs["status"] == "succeeded")].head(2)
    st = store_io.open(tmp_path / "store", create=True)
    st.append({"runs": few})
    res = build_report(tmp_path / "r.html", store=tmp_path / "store")
    (sec,) = res.sections
    assert list(sec.figures) == ["runtime_vs_executors"]
    notes = " | ".join(sec.notes)
    assert "no fitted whole-job model" in notes and "stage breakdown unavailable" in notes and "advice" in notes
    # each unavailable piece with the fix the CLI prints under its error
    assert all("(fix: " in n for n in sec.notes if " unavailable: " in n), notes
    # the job's own reason, where it belongs, not a guess
    assert "no fitted whole-job model for this job (only 2 usable runs (of 2); a runtime model needs at least 4, and choosing one automatically at least 6)" in notes
    page = res.path.read_text()
    assert len(_images(page)) == 1 and "no fitted whole-job model" in page
    assert "runtime models unavailable" not in page   # said once, in the job's section


def test_a_job_too_small_for_a_model_still_gets_the_advice_suggest_gives(tmp_path):
    """Two recorded runs: no whole-job model, but `suggest` answers by replaying their tasks, so
    the report's advice does too; a job whose runs recorded no input size says why it has none."""
    import pandas as pd

    from sparkpredict import suggest_executors
    from sparkpredict.report import build_report
    from sparkpredict.store import io as store_io

    src = store_io.open(HISTORY)
    runs = src.runs()
    two = runs[(runs["job"] == "sqljoin") & (runs["status"] == "succeeded")].head(2)
    one = runs[(runs["job"] == "wordcount") & (runs["status"] == "succeeded")].head(1)
    ids = two["run_id"].tolist() + one["run_id"].tolist()
    sizeless = runs[(runs["job"] == "sort") & (runs["status"] == "succeeded")].head(2).assign(input_bytes=0)
    st = store_io.open(tmp_path / "store", create=True)
    st.append({"runs": pd.concat([two, one, sizeless]), "stages": src.read("stages", run_ids=ids),
               "tasks": src.read("tasks", run_ids=ids), "executors": src.read("executors", run_ids=ids)})
    res = build_report(tmp_path / "r.html", store=tmp_path / "store")
    sec = {s.job: s for s in res.sections}
    join = sec["sqljoin"]
    # one story: no whole-job model, and the advice from the replay the section names
    (note,) = [n for n in join.notes if "no fitted whole-job model" in n]
    assert "the advice, the CV MAPE in the jobs table and the runs furthest above the model come from the replay" in note
    assert not any("unavailable" in n for n in join.notes), join.notes
    direct = suggest_executors("sqljoin", int(2 * two["input_bytes"].max()), store=tmp_path / "store")
    assert direct.model_name.startswith("replay") and join.advice_text == _advice_text(direct)
    # the job table names the model the advice used, not "-"
    assert _job_table(res.path.read_text())["sqljoin"][0] == html.escape(direct.model_name)
    assert any("recorded no input size" in n for n in sec["sort"].notes)
    # one run: the replay's error is its self-check, not a cross-validation, and the table says so
    assert "(self-check)" in _job_table(res.path.read_text())["wordcount"][1]
    assert "(self-check)" not in _job_table(res.path.read_text())["sqljoin"][1]


def test_report_advice_follows_confidence_and_shows_the_advice_warnings(history_report, tmp_path):
    """`report --confidence 0.5`: the advice (text, candidate header and intervals) is the one
    `suggest --confidence 0.5` gives, not the 90 % default, and its warnings are on the page."""
    from sparkpredict import suggest_executors
    from sparkpredict.cli import main
    from sparkpredict.features.runs import runs_table

    out = tmp_path / "r.html"
    assert main(["report", "--store", str(HISTORY), "--job", "wordcount", "--confidence", "0.5",
                 "--out", str(out)]) == 0
    page = out.read_text()
    target = int(2 * runs_table(HISTORY).query("job == 'wordcount'")["input_bytes"].max())
    direct = suggest_executors("wordcount", target, store=HISTORY, confidence=0.5)
    assert "50% interval" in direct.summary() and f"<pre>{html.escape(_advice_text(direct))}</pre>" in page
    assert "<th>50% interval</th>" in page and "<th>90% interval</th>" not in page
    at90 = next(s for s in history_report.sections if s.job == "wordcount")
    assert "90% interval" in at90.advice_text and at90.advice_text != _advice_text(direct)
    # the CV error of wordcount's model (42 %) is worth a warning in suggest, so in the report too
    assert any("cross-validated error" in w for w in direct.warnings), direct.warnings
    items = re.search(r"<ul class='advice-warnings warn'>(.*?)</ul>", page, re.DOTALL)
    assert items, "no advice warnings on the page"
    assert re.findall(r"<li>(.*?)</li>", items.group(1), re.DOTALL) == [html.escape(w) for w in direct.warnings]
    assert at90.advice_warnings and "the model&#x27;s cross-validated error" in history_report.path.read_text()


def test_a_feature_no_run_of_the_job_recorded_costs_no_numpy_warning(tmp_path):
    """Runs without executor memory (an ingested log, `_store_from` runs): the plots' typical value
    of it is unknown, and finding that out must not print numpy's "Mean of empty slice"."""
    import warnings

    from sparkpredict.report import build_report
    from sparkpredict.store import io as store_io

    runs = store_io.open(HISTORY).runs()
    st = store_io.open(tmp_path / "store", create=True)
    st.append({"runs": runs[runs["job"] == "sort"].assign(executor_memory_mb=None)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = build_report(tmp_path / "r.html", store=tmp_path / "store")
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    (sec,) = res.sections
    assert sec.model_name and {"runtime_vs_executors", "predicted_vs_actual"} <= set(sec.figures), sec.notes


def _job_table(page: str) -> dict[str, tuple[str, str]]:
    """The summary table: job (the link's text; its target is the section's id) -> (model, CV
    MAPE) as the page shows them."""
    rows = re.findall(r"<a href='#job-[^']+'>([^<]*)</a></td><td>\d+</td><td>\d+</td><td style='text-align:left'>([^<]*)</td>"
                      r"<td>([^<]*)</td>", page)
    return {html.unescape(job): (model, cv) for job, model, cv in rows}


def test_report_and_suggest_answer_from_the_same_model(tmp_path):
    """After a retrain the report shows the registry's models, as `suggest` uses them; a run
    recorded since makes the registry's model of that job behind: both then fit the current
    runs, and the report says why, as `suggest` warns."""
    import shutil

    from sparkpredict import suggest_executors
    from sparkpredict.features.runs import runs_table
    from sparkpredict.report import build_report
    from sparkpredict.retrain import retrain_local
    from sparkpredict.store import io as store_io

    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    retrain_local(path, kind="amdahl", stage_models=False)  # a model no fit here would choose

    def same_as_suggest(res):
        page = res.path.read_text()
        table = _job_table(page)
        for s in res.sections:
            target = int(2 * runs_table(path).query("job == @s.job")["input_bytes"].max())
            a = suggest_executors(s.job, target, store=path)
            assert s.advice_text == _advice_text(a) and table[s.job][0] == a.model_name, s.job
            # and says where the model came from, in suggest's words
            assert s.model_source == a.model_source and html.escape(a.model_source) in page, s.job
        return page

    res = build_report(tmp_path / "r.html", store=path)
    same_as_suggest(res)
    assert {s.model_name for s in res.sections} == {"amdahl"}
    assert all(s.model_source.startswith("from the registry, version 1 (retrain ") for s in res.sections)
    assert not any("registry" in n for s in res.sections for n in s.notes)

    st = store_io.open(path)
    runs = st.runs()
    extra = runs[(runs.job == "sort") & (runs.status == "succeeded")].tail(1)
    st.append({"runs": extra.assign(run_id="app-sort-new", app_id="app-sort-new",
                                    updated_ms=extra.updated_ms + 10**6, start_ms=extra.start_ms + 10**6)})
    res = build_report(tmp_path / "r2.html", store=path)
    page = same_as_suggest(res)
    sec = {s.job: s for s in res.sections}
    assert sec["sort"].model_name != "amdahl" and sec["sort"].n_runs == 25
    assert sec["sqljoin"].model_name == sec["wordcount"].model_name == "amdahl"
    assert sec["sort"].model_source == "fitted on the store's runs"  # the note says why not the registry's
    (note,) = [n for n in sec["sort"].notes if "registry" in n]
    assert "predates its latest runs" in note and html.escape(note) in page
    assert any(note == w for w in suggest_executors("sort", "64MB", store=path).warnings)


def test_an_output_name_too_long_for_the_file_system_is_refused_first(tmp_path, capsys):
    """A legal name of about 245 bytes failed after the whole report was built, naming a
    temporary file the user never gave (its name added 10 bytes)."""
    from sparkpredict.cli import main

    for name in ("a" * 245 + ".html", "b" * 251 + ".html"):
        rc = main(["report", "--store", str(HISTORY), "--job", "sort", "--out", str(tmp_path / name)])
        err = capsys.readouterr().err
        if len(name) <= 255:
            assert rc == 0 and (tmp_path / name).is_file(), err
        else:
            assert rc == 2 and "File name too long" in err and ".tmp" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a" * 245 + ".html"]
