"""What README.md and docs/*.md tell a user to type exists in the code: every option a
``sparkpredict`` command line in them gives, every ``spark.sparkpredict.*`` key, every keyword a
Python example passes to the public API, every column with a unit suffix, and the listener's
defaults in capture.md's settings table. Pure Python: no JVM, no store.
"""
from __future__ import annotations

import argparse
import ast
import inspect
import re
from pathlib import Path

import pytest

from sparkpredict.cli import build_parser
from sparkpredict.store import schema

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
JAVA = REPO / "listeners" / "src" / "main" / "java" / "io" / "sparkpredict"
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


def _snippets() -> list[tuple[str, int, str, bool]]:
    """(doc, line, text, in a fenced block) for each fenced line and each inline code span."""
    out = []
    for doc in DOCS:
        fenced = False
        for i, line in enumerate(doc.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                out.append((doc.name, i, line, True))
            else:
                out.extend((doc.name, i, s, False) for s in re.findall(r"`([^`]+)`", line))
    return out


def _command_lines() -> list[tuple[str, int, list[str]]]:
    """Each ``sparkpredict CMD ...`` the documents show, as words up to a ``--`` (spark-submit's
    own arguments follow it), a shell comment or the end of a table cell; and each inline span
    that starts with a command's name (``retrain --compact``, ``store edit --input-size``)."""
    cmds = _subcommands(build_parser())
    lines = []
    for doc, i, text, fenced in _snippets():
        for m in re.finditer(r"(?:^|[\s$(])sparkpredict\s+([a-z][a-z_-]*)([^|#`;]*)", text):
            if m.group(1) != "import" and (m.group(1) in cmds or fenced or "--" in m.group(2)):
                words = [m.group(1), *m.group(2).split()]
                lines.append((doc, i, words[:words.index("--")] if "--" in words else words))
        words = text.split()
        if not fenced and words and words[0] in cmds:
            lines.append((doc, i, words[:words.index("--")] if "--" in words else words))
    return lines


def test_every_documented_command_line_uses_options_its_command_has():
    cmds = _subcommands(build_parser())
    lines = _command_lines()
    assert len(lines) > 100, "found too few command lines: the extraction is broken"
    wrong = []
    for doc, i, words in lines:
        if words[0] not in cmds:
            wrong.append(f"{doc}:{i}: no command {words[0]!r}")
            continue
        parser, name = cmds[words[0]], words[0]
        subs = _subcommands(parser)
        if subs and len(words) > 1 and not words[1].startswith(("-", "[")):
            if words[1] not in subs:
                wrong.append(f"{doc}:{i}: `{words[0]}` has no action {words[1]!r}")
                continue
            parser, name = subs[words[1]], " ".join(words[:2])
        for flag in FLAG.findall(" ".join(words[1:])):
            if flag not in _options(parser):
                wrong.append(f"{doc}:{i}: `sparkpredict {name}` has no {flag}")
    assert not wrong, "\n".join(wrong)


def test_every_documented_listener_key_is_read_by_the_code():
    java = "\n".join(p.read_text() for p in JAVA.glob("*.java"))
    python = "\n".join(p.read_text() for p in (REPO / "sparkpredict").rglob("*.py"))
    conf = (REPO / "conf" / "spark-defaults.conf.sparkpredict").read_text()
    keys = set()
    for text in [d.read_text() for d in DOCS] + [conf]:
        keys |= set(re.findall(r"spark\.sparkpredict\.([A-Za-z][A-Za-z.]*[A-Za-z])", text))
    assert {"store", "job", "tasks", "inputBytes", "flushIntervalMs"} <= keys
    unread = sorted(k for k in keys if f'"{k}"' not in java and f'spark.sparkpredict.{k}"' not in java
                    and f"spark.sparkpredict.{k}" not in python)
    assert not unread, f"spark.sparkpredict.* keys the documents name that no code reads: {unread}"


def _java_default(key: str) -> str | None:
    """The default the listener or the host plugin gives ``spark.sparkpredict.<key>``: the
    argument after the key in its read (``count(conf, P + "key", 0)``), constants resolved."""
    for path in JAVA.glob("*.java"):
        src = path.read_text()
        const = re.search(rf'static final String (\w+) = "spark\.sparkpredict\.{key}"', src)
        name = rf'(?:P \+ "{key}"|{const.group(1)})' if const else rf'P \+ "{key}"'
        m = re.search(rf"\(\s*conf,\s*{name},\s*([\w.]+)\)", src)
        if m:
            value = m.group(1)
            defined = re.search(rf"static final \w+ {value} = ([\w.]+);", src)
            return (defined.group(1) if defined else value).rstrip("L").replace("_", "")
    return None


def test_the_settings_tables_defaults_are_the_listeners():
    rows = re.findall(r"^\| `spark\.sparkpredict\.(\w+)` \| `(\d+)` \|", (REPO / "docs" / "capture.md").read_text(), re.MULTILINE)
    assert len(rows) >= 4, rows
    wrong = {k: (doc, _java_default(k)) for k, doc in rows if _java_default(k) != doc}
    assert not wrong, f"key: (capture.md's default, the listener's): {wrong}"


def test_every_documented_column_with_a_unit_is_a_column_or_a_name_in_the_code():
    columns = {n for t in schema.TABLES.values() for n in t.names}
    code = "\n".join(p.read_text() for p in (REPO / "sparkpredict").rglob("*.py"))
    unknown = []
    for doc, i, text, _ in _snippets():
        for tok in re.findall(r"\b[a-z][a-z0-9_]*_(?:ms|bytes|mb|records)\b", text):
            if tok not in columns and not re.search(rf"\b{tok}\b", code):
                unknown.append(f"{doc}:{i}: {tok}")
    assert not unknown, "\n".join(unknown)


def _public_functions() -> dict[str, object]:
    import sparkpredict
    from sparkpredict.capture import listener
    from sparkpredict.monitor import explain_run
    from sparkpredict.retrain import retrain

    return {"suggest_executors": sparkpredict.suggest_executors, "attach": sparkpredict.attach,
            "ingest_event_logs": sparkpredict.ingest_event_logs, "explain_run": explain_run,
            "retrain": retrain, "listener_conf": listener.listener_conf}


def test_python_examples_pass_keywords_the_api_takes():
    funcs = _public_functions()
    calls, wrong = 0, []
    for doc in DOCS:
        for block in re.findall(r"^```python\n(.*?)^```", doc.read_text(), re.MULTILINE | re.DOTALL):
            try:
                tree = ast.parse(block)
            except SyntaxError:
                continue  # a signature listing, not code to run
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name not in funcs:
                    continue
                calls += 1
                params = inspect.signature(funcs[name]).parameters  # type: ignore[arg-type]
                wrong += [f"{doc.name}: {name}({k.arg}=...)" for k in node.keywords
                          if k.arg is not None and k.arg not in params]
    assert calls >= 8, f"found {calls} calls: the extraction is broken"
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("doc", [d.name for d in DOCS])
def test_documents_cite_files_that_exist(doc):
    """A path the document names in code (``benchmarks/make_interference_dataset.py``,
    ``conf/spark-defaults.conf.sparkpredict``) is in the repository."""
    path = next(d for d in DOCS if d.name == doc)
    missing = []
    for _, i, text, _ in [s for s in _snippets() if s[0] == doc]:
        for ref in re.findall(r"(?<![\w/.~$-])((?:sparkpredict|benchmarks|jobs|conf|docs|tests|listeners)/[\w./-]*\w)", text):
            if "<" in ref or "*" in ref or ref.startswith(("sparkpredict/docs", "sparkpredict/jobs")):
                continue  # a pattern, or the copy an installed package has
            if not (REPO / ref).exists() and not (REPO / ref.rstrip("/")).exists():
                missing.append(f"{i}: {ref}")
    assert not missing, f"{path.name} names files the repository lacks:\n" + "\n".join(missing)


# Figures the documents quote from benchmarks/RESULTS.md. A benchmark rerun rewrites its section;
# a document that quoted the run before goes on stating numbers no run measured any more (the
# chance calibration's 50-70 % and 30-50 % rows, suggest --store's cold-process times did).
RESULTS = REPO / "benchmarks" / "RESULTS.md"
NUM = r"([\d,]*\d(?:\.\d+)?)"


def _section(name: str) -> str:
    m = re.search(rf"<!-- BEGIN {name} -->\n(.*?)<!-- END {name} -->", RESULTS.read_text(), re.DOTALL)
    assert m, f"benchmarks/RESULTS.md has no section {name}"
    return m.group(1)


def _find(text: str, pattern: str, where: str) -> list[str]:
    m = re.search(pattern.replace("NUM", NUM), text, re.DOTALL)
    assert m, f"{where}: nothing matches {pattern!r} (reworded? update this test with it)"
    return [g.replace(",", "") for g in m.groups()]


def _rounds_to(measured: str, quoted: str, scale: int = 1) -> bool:
    """``measured`` (times ``scale``: 0.047 of a fraction is 4.7 points) rounds half up to
    ``quoted`` at the quoted number's precision."""
    from decimal import ROUND_HALF_UP, Decimal

    return (Decimal(measured) * scale).quantize(Decimal(quoted), rounding=ROUND_HALF_UP) == Decimal(quoted)


def _doc(name: str) -> str:
    return " ".join((REPO / name).read_text().split())  # line breaks fall anywhere in a sentence


def _help(*words: str) -> str:
    parser = build_parser()
    for w in words:
        parser = _subcommands(parser)[w]
    return " ".join((parser.description or "").split())


def _quoted_figures():
    """(where, quoted, measured, scale) for each figure a document takes from RESULTS.md."""
    aq, ss, fs = _section("advice_quality"), _section("suggest_speed"), _section("fit_speed")
    lo, sr, c3o = _section("listener_overhead"), _section("store_reads"), _section("c3o_models")
    sm, mq = _section("stage_models"), _section("monitor_quality")
    readme, advice = _doc("README.md"), _doc("docs/advice.md")
    out = []

    def pair(where, quoted, measured, scale=1):
        assert len(quoted) == len(measured), (where, quoted, measured)
        out.extend((where, q, m, scale) for q, m in zip(quoted, measured))

    met = _find(aq, r"\| 0\.9 \| 147 \| NUM% \| NUM% \| NUM \|", "advice_quality")
    at_choice = _find(aq, r"nearest the deadline: MAPE NUM%", "advice_quality")
    pair("README advice", _find(readme, r"in \*\*NUM %\*\* of cases \(each advised count's mean over its 5 runs; "
                                        r"NUM % of the single runs\), at a mean cost \*\*NUM x\*\*".replace(" x", "x"), "README"), met)
    pair("README models' error where the choice is made",
         _find(readme, r"the models' error there is NUM %", "README"), at_choice)
    pair("advice.md deadline rule", _find(advice, r"the advice met the deadline in NUM % of 147 held-out cases, "
                                                  r"at a mean cost NUMx", "advice.md"), [met[0], met[2]])
    pair("advice.md models' error where the choice is made",
         _find(advice, r"the models', at a size they have not seen, is NUM %", "advice.md"), at_choice)

    buckets = ["95%-100%", "90%-95%", "70%-90%", "50%-70%", "30%-50%", "10%-30%", "0%-10%"]
    rows = {b: _find(aq, rf"\| {re.escape(b)} \| NUM \| NUM% \| NUM% \|", "advice_quality") for b in buckets}
    brier = _find(aq, r"Brier score NUM ", "advice_quality")
    pair("advice.md chance calibration",
         _find(advice, r"stated chance was 95 % or more, NUM % met the deadline; 90-95 %: NUM %; 70-90 %: NUM %; "
                       r"50-70 %: NUM %; 30-50 %: NUM %; 10-30 %: NUM %; below 10 %: NUM % \(NUM runs, Brier score NUM,",
               "advice.md"),
         [rows[b][2] for b in buckets] + [str(sum(int(rows[b][0]) for b in buckets)), brier[0]])

    fb = _section("advice_fallback")
    tol = {t: _find(fb, rf"\| {re.escape(t)} \| NUM% \| NUM \|", "advice_fallback") for t in ("0.00 (shipped)", "0.03", "0.06")}
    priced = _find(fb, r"\| 300 \| NUM% \| NUM \|", "advice_fallback")
    pair("advice.md fallback what-if",
         _find(advice, r"cut the cost ratio from NUM to NUM but the deadlines met from NUM % to NUM % \(within 6 %: NUM and "
                       r"NUM %\).*?never met 90 % of the deadlines: NUM % at best, at a cost ratio of NUM\.", "advice.md"),
         [tol["0.00 (shipped)"][1], tol["0.03"][1], tol["0.00 (shipped)"][0], tol["0.03"][0], tol["0.06"][1], tol["0.06"][0]]
         + priced)

    first = _find(ss, r"first call \(fits, caches the fit\) \| NUM s", "suggest_speed")
    later = _find(ss, r"later calls \(load the cached fit\) \| NUM s", "suggest_speed")
    pair("advice.md cached advice", _find(advice, r"loads it \(NUM s for the CLI against NUM s with the fit", "advice.md"),
         later + first)
    pair("retrain.md advice behind the runs",
         _find(_doc("docs/retrain.md"), r"the first call fits \(NUM s\) and later ones load that fit \(NUM s", "retrain.md"),
         first + later)
    pair("models.md kernel_ridge", _find(_doc("docs/models.md"), r"with one it takes NUM s, median in `fit_speed`", "models.md"),
         _find(fs, r"\| kernel_ridge \| NUM \|", "fit_speed"))

    shares = _find(lo, r"its own callbacks.*?median \*\*NUM %\*\*.*?writer thread.*?median \*\*NUM %\*\*.*?"
                       r"host plugin.*?median \*\*NUM %\*\*", "listener_overhead")
    total = _find(lo, r"= NUM %, within 2 %", "listener_overhead")
    pair("README capture", _find(readme, r"listener-bus thread \(NUM % of the wall time, median of 5 rounds\), its writer "
                                         r"thread \(NUM %\) and the host plugin \(NUM %\), adds up to NUM %", "README"),
         shares + total)
    pair("capture.md listener cost", _find(_doc("docs/capture.md"), r"writer and plugin take NUM % of the wall time", "capture.md"),
         total)

    suggest = _find(sr, r"`suggest --store`, first call \(fits\) \| NUM \| NUM \|", "store_reads")
    compacted = [_find(sr, rf"`Store\.read` {t} \| NUM \| NUM \|", "store_reads")[1] for t in ("runs", "stages", "tasks")]
    pair("README store compact", _find(readme, r"a store of 3,000 runs took NUM s, and NUM s once compacted", "README"), suggest)
    pair("capture.md compacting", _find(_doc("docs/capture.md"), r"and `suggest --store` NUM s; compacted, NUM to NUM s per "
                                                                 r"table and NUM s", "capture.md"),
         [suggest[0], min(compacted, key=float), max(compacted, key=float), suggest[1]])
    pair("store compact --help", _find(_help("store", "compact"), r"in NUM to NUM s compacted", "store compact --help"),
         [min(compacted, key=float), max(compacted, key=float)])

    combined = _find(c3o, r"\| combined \| NUM % \| [-\d.]+ \| NUM % \| [-\d.]+ \| NUM % \| [-\d.]+ \| NUM % \|", "c3o_models")
    plate = _find(c3o, r"\| plate2d \| NUM % \| [-\d.]+ \| NUM % \| [-\d.]+ \| NUM % \| [-\d.]+ \| NUM % \|", "c3o_models")
    pair("README runtime models",
         _find(readme, r"the combined model has NUM % error inside the runs.*?NUM % extrapolating to input sizes outside "
                       r"the runs.*?the 2D-plate equation alone: NUM %\), NUM % to larger inputs only \(trained on the "
                       r"smallest 60 % of sizes; 2D-plate NUM %\) and NUM % to executor counts outside the runs "
                       r"\(2D-plate alone: NUM %", "README"),
         [combined[0], combined[1], plate[1], combined[3], plate[3], combined[2], plate[2]])

    pair("README scheduler replay",
         _find(readme, r"NUM % error at the executor count it used \(NUM % on seven real event logs.*?At other counts NUM % "
                       r"on this 2-core machine \(NUM % told.*?with a slot per core, NUM %", "README"),
         _find(sm, r"Self-check at the executor count actually used \(72 runs\): mean \|error\| NUM %", "stage_models")
         + _find(sm, r"Event logs at their actual executor count: mean \|error\| NUM %", "stage_models")
         + _find(sm, r"mean \|error\| NUM % over 288 pairs, default replay; with the host_cores=2 correction: NUM %", "stage_models")
         + _find(sm, r"Replay: self-check mean \|error\| [\d.]+ %, other executor counts mean \|error\| NUM %", "stage_models"))
    out.extend(("README slowdown monitor", q, m, 100) for q, m in zip(
        _find(readme, r"slowdown error NUM points, cause named right in NUM %", "README"),
        _find(mq, r"on held-out workloads: \*\*met\*\* \(history NUM;", "monitor_quality")
        + _find(mq, r"top-1 cause accuracy >= 0\.8: \*\*met\*\* \(NUM over", "monitor_quality")))
    rs = _section("retrain_scaling")
    auto = _find(rs, r"`auto`: local\[2\] / local loop = \*\*NUMx\*\*.*?= \*\*NUM jobs\*\* with a new JVM \(NUM s start-up",
                 "retrain_scaling")
    equation = _find(rs, r"`amdahl`: local\[2\] / local loop = \*\*NUMx\*\*.*?= \*\*NUM jobs\*\* with a new JVM",
                     "retrain_scaling")
    pair("retrain.md crossovers",
         _find(_doc("docs/retrain.md"), r"Spark `local\[2\]` fits NUMx faster, and its start-up \(a new JVM and Python "
                                        r"workers importing scikit-learn, NUM s\) pays back after NUM jobs.*?Spark `local\[2\]` "
                                        r"fits NUMx faster on the AMD EPYC, so the same start-up takes NUM jobs", "retrain.md"),
         [auto[0], auto[2], auto[1], *equation])

    monitor = _doc("docs/monitor.md")
    per_workload = _find(mq, r"per held-out workload: sort NUM \(24\.0 runs\), sqljoin NUM \(24\.0 runs\), wordcount NUM ",
                         "monitor_quality")
    table = {row: _find(mq, rf"\| {re.escape(row)} \| 72 \| NUM \| [\d.]+ \| NUM \| NUM \|", "monitor_quality")
             for row in ("history", "history, full boosting", "zero", "raw", "dae", "history, no host evidence",
                         "history, memory counted as cpu", "history, without memory held")}
    pair("monitor.md degradation and cause",
         _find(monitor, r"Degradation MAE\*\* on held-out workloads: NUM \(sort NUM, sqljoin NUM, wordcount NUM; the null "
                        r"estimate D = 0 scores NUM\)\. Clean runs measured against each other differ by a mean \|D\| of NUM"
                        r".*?with weight 1 it raises the held-out MAE to NUM.*?Top-1 cause accuracy\*\*: NUM over the 47 runs"
                        r".*?the same runs score NUM:.*?scores NUM: memory 0 of 11.*?it scores NUM: cpu"
                        r".*?\*\*Autoencoder\*\*: no gain \(MAE NUM with the DAE against NUM without any clean reference, and "
                        r"NUM with the clean history\)", "monitor.md"),
         [table["history"][0], *per_workload, table["zero"][0], table["zero"][1], table["history, full boosting"][0],
          table["history"][2], table["history, no host evidence"][2], table["history, memory counted as cpu"][2],
          table["history, without memory held"][2], table["dae"][0], table["raw"][0], table["history"][0]])
    own, cont = _section("monitor_quality_own_cores"), _section("monitor_quality_contended")
    pair("monitor.md own cores",
         _find(monitor, r"top-1 accuracy NUM over the 11 slowed runs, degradation MAE NUM \(null NUM\)", "monitor.md"),
         _find(own, r"\| history \| 32 \| NUM \| [\d.]+ \| [\d.]+ \| NUM \| 11 \|", "monitor_quality_own_cores")[::-1]
         + _find(own, r"\| zero \| 32 \| NUM \|", "monitor_quality_own_cores"))
    pair("monitor.md emulated devices",
         _find(monitor, r"Top-1 accuracy over slowed runs is NUM \(separability check NUM, a gauge, not a strict bound\)\. "
                        r"Degradation MAE is NUM, against a noise floor of NUM", "monitor.md"),
         _find(cont, r"\| history \| 72 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| NUM \|", "contended")
         + _find(cont, r"names the bubble of NUM of interfered runs", "contended")
         + _find(cont, r"\| history \| 72 \| NUM \|", "contended")
         + _find(cont, r"mean \|D\| NUM \(max", "contended"))
    return out


def test_figures_the_documents_quote_are_the_latest_in_results():
    figures = _quoted_figures()
    assert len(figures) >= 40, f"found {len(figures)} figures: the extraction is broken"
    wrong = [f"{where}: says {quoted}, RESULTS.md has {measured}" + (f" (x{scale})" if scale != 1 else "")
             for where, quoted, measured, scale in figures if not _rounds_to(measured, quoted, scale)]
    assert not wrong, "\n".join(wrong)


def test_ingest_help_and_readme_name_every_codec_the_reader_reads():
    """`ingest --help` and README's command table listed plain, zstd, lz4, snappy and lzf; a
    gzipped log, which docs/ingest.md's table and the reader take, went unnamed."""
    from sparkpredict.capture.eventlog import _MAGIC

    codecs = {{"gz": "gzip"}.get(c, c) for c in _MAGIC.values()}
    assert {"zstd", "lz4", "snappy", "lzf", "gzip"} <= codecs
    readme = next(line for line in (REPO / "README.md").read_text().splitlines() if "`sparkpredict ingest PATH...`" in line)
    for where, text in (("ingest --help", _help("ingest")), ("README's ingest row", readme),
                        ("docs/ingest.md", (REPO / "docs" / "ingest.md").read_text())):
        missing = sorted(c for c in codecs if not re.search(rf"\b{c}", text))
        assert not missing, f"{where} does not name {missing}"


def test_suggest_help_states_the_default_ceiling_of_the_candidates():
    """docs/advice.md gives max_executors' default as twice the history's largest count, at
    least 8 and twice min_executors, at most 1000; `suggest --help` left the cap out."""
    from sparkpredict import advise

    parser = _subcommands(build_parser())["suggest"]
    text = next(a.help for a in parser._actions if "--max-executors" in a.option_strings)
    assert f"at most {advise._MAX_DEFAULT_CAP}" in text
    assert f"at most {advise._MAX_DEFAULT_CAP}" in _doc("docs/advice.md")
