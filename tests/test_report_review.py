"""What a review of `sparkpredict report` found: a 506 % error printed as 5.1 %, the slowed runs
missing for jobs the advice answers by replay, "1 runs", and section ids with spaces."""
from __future__ import annotations

import html
import math
import re
from pathlib import Path

import pytest

HISTORY = Path(__file__).parent / "data" / "history"


def _page(sections) -> str:
    from sparkpredict.report import render_html

    return render_html(sections, "/some/store", [])


def test_pct_prints_the_unit_its_caller_names():
    from sparkpredict.report_figures import pct

    # a replay far off its runs: 5.06 is 506 %, not 5.06 %
    assert pct(5.0639, unit="fraction") == "506.4%"
    assert pct(0.05, unit="fraction") == "5.0%"
    assert pct(5.0, unit="percent") == "5.0%"
    assert pct(0.5, unit="percent") == "0.5%"
    with pytest.raises(TypeError):
        pct(0.05)  # type: ignore[call-arg]  # the unit is never guessed from the value
    with pytest.raises(ValueError, match="unit must be"):
        pct(0.05, unit="ratio")  # type: ignore[arg-type]


def test_job_table_shows_a_cv_error_over_150_percent_as_it_is():
    from sparkpredict.report import JobSection

    page = _page([JobSection("warm", 3, advice_model_name="replay", advice_cv_mape=5.0639),
                  JobSection("wc", 6, model_name="amdahl", cv_mape=1.2),
                  JobSection("sort", 9, model_name="stages", cv_mape=math.nan)])
    cells = dict(re.findall(r">([a-z]+)</a></td><td>\d+</td><td>\d+</td><td style='text-align:left'>[^<]*</td><td>([^<]*)</td>",
                            page))
    assert cells == {"warm": "506.4%", "wc": "120.0%", "sort": "-"}


def test_predicted_vs_actual_quotes_a_large_cv_error_as_a_fraction(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.axes
    import numpy as np
    import pandas as pd

    from sparkpredict.report_figures import fig_predicted_vs_actual

    class Model:
        cv_mape_ = 5.06

        def predict_interval(self, rows, confidence):
            t = np.full(len(rows), 10.0)
            return {"predicted_runtime_s": t, "lower_s": t / 2, "upper_s": t * 2}

    titles = []
    real = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(matplotlib.axes.Axes, "set_title",
                        lambda self, label, *a, **k: (titles.append(label), real(self, label, *a, **k))[1])
    runs = pd.DataFrame({"input_bytes": [1e6, 2e6], "executors": [1.0, 2.0], "runtime_s": [8.0, 12.5]})
    fig_predicted_vs_actual(runs, Model(), ["input_bytes", "executors"], 0.9)
    (title,) = titles
    assert "cross-validated MAPE 506.0%" in title and "in-sample MAPE 22.5%" in title


def test_a_section_of_one_run_says_1_run():
    from sparkpredict.report import JobSection

    page = _page([JobSection("one", 1), JobSection("two", 2, advice_model_name="replay")])
    assert "1 run</span>" in page and "2 runs, no whole-job model, advice from replay</span>" in page
    assert "1 runs" not in page


def test_section_ids_are_valid_unique_stable_and_linked():
    from sparkpredict.report import JobSection

    jobs = ["NDS - Power Run", "NDS-Power-Run", "NDS  Power Run", "wordcount", "Spark shell", "日本"]
    page = _page([JobSection(j, 2) for j in jobs])
    ids = re.findall(r"\bid='([^']*)'", page)
    assert len(ids) == len(jobs) == len(set(ids)), ids
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in ids), ids
    # each job's link in the table leads to its own heading
    links = dict(re.findall(r"<a href='#([^']*)'>([^<]*)</a>", page))
    headings = dict(re.findall(r"<h2 id='([^']*)'>([^<]*) <span", page))
    assert links == headings and set(links.values()) == {html.escape(j) for j in jobs}
    # a plain name keeps the id earlier reports gave it; another's id does not depend on the other jobs
    assert headings["job-wordcount"] == "wordcount"
    from sparkpredict.report import job_anchor

    alone = re.findall(r"<h2 id='([^']*)'", _page([JobSection("NDS - Power Run", 1)]))
    assert alone == [job_anchor("NDS - Power Run")] and alone[0] in headings
    assert alone[0].startswith("job-NDS-Power-Run-")


def test_section_ids_stay_unique_when_a_name_reads_as_anothers_id():
    from sparkpredict.report import JobSection, job_anchor

    twin = job_anchor("a b")[len("job-"):]  # a job literally named like the checksummed id
    ids = re.findall(r"<h2 id='([^']*)'", _page([JobSection("a b", 1), JobSection(twin, 1)]))
    assert len(set(ids)) == 2, ids


def test_a_job_advised_by_replay_lists_the_runs_its_advice_names(tmp_path):
    """No whole-job model (two runs), so the advice replays their tasks and its high-error
    warning names the slower run: the section lists that run, as the advice ranks it. A job of
    one run (the replay's self-check) and a job without input sizes say why none are listed."""
    import pandas as pd

    from sparkpredict.advice_source import HistorySource
    from sparkpredict.features.runs import runs_table
    from sparkpredict.report import build_report
    from sparkpredict.store import io as store_io

    src = store_io.open(HISTORY)
    runs = src.runs()
    table = runs_table(runs)
    # two sqljoin runs of one size and executor count, the second 1.8x slower than the first
    pair = table.query("job == 'sqljoin' and input_bytes == 3999987 and executors == 2")["run_id"].tolist()
    one = table.query("job == 'wordcount'")["run_id"].head(1).tolist()
    ids = pair + one
    sizeless = runs[(runs["job"] == "sort") & (runs["status"] == "succeeded")].head(2).assign(input_bytes=0)
    st = store_io.open(tmp_path / "store", create=True)
    st.append({"runs": pd.concat([runs[runs["run_id"].isin(ids)], sizeless]),
               "stages": src.read("stages", run_ids=ids), "tasks": src.read("tasks", run_ids=ids),
               "executors": src.read("executors", run_ids=ids)})
    res = build_report(tmp_path / "r.html", store=tmp_path / "store")
    sec = {s.job: s for s in res.sections}
    join = sec["sqljoin"]
    assert join.model_name is None and join.advice_model_name == "replay"
    named = HistorySource.resolve("sqljoin", store=tmp_path / "store").runs_above_model()
    assert len(named) == 1, named
    (rid, ratio), = named
    # the advice's warning names it ...
    assert any(f"{rid} {ratio:.1f}x" in w for w in join.advice_warnings), join.advice_warnings
    # ... and the section lists it, with the replay's ratio (against the replay of the other
    # run: leave-one-out) and the run as recorded
    assert [(r, q) for r, _, _, _, q in join.slow_runs] == [(rid, pytest.approx(ratio))]
    runtime = table.set_index("run_id").loc[rid, ["input_bytes", "executors", "runtime_s"]]
    assert join.slow_runs[0][1:4] == tuple(runtime) and not join.slow_runs_in_sample
    page = res.path.read_text()
    section = page[page.index("id='job-sqljoin'"):page.index("id='job-wordcount'")]
    assert "Runs furthest above the model" in section and f"<code>{rid}</code>" in section
    assert f"{ratio:.2f}x" in section and "fitted without it" in section

    def absent(job: str) -> str:
        s = sec[job]
        assert not s.slow_runs and s.slow_runs_absent
        assert html.escape(s.slow_runs_absent) in page
        return s.slow_runs_absent

    assert "one run" in absent("wordcount") and "self-check" in absent("wordcount")
    assert "no input size" in absent("sort")
