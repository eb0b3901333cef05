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
