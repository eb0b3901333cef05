"""Replacing a stored copy of a log on a store of many ingested logs (what an upgrade costs).

An upgrade whose ingest measures input otherwise (0.3.0: SQL file scans count their files)
reads every log ingested before it again and replaces its stored copy. Whether a copy may be
replaced asks whether an edit holds rows of the run: that read opened the runs file of every
batch in the store, once per replaced log. Now it opens the batches that can hold the run:
its own, edits, compacted ones (an ingest batch holds the one run its label names).

The store: ``--runs`` copies of one real Spark 4 log's run
(``tests/data/eventlogs/aqe_executors_killed_spark4.zstd``), each in a batch of its own as
ingest writes it. Measured in the same run, alternated, medians of ``--repeats``:

1. the reference: the read the check did before (``Store.read`` of every batch's runs rows of
   the run, ``all_rows=True``);
2. the check now (``eventlog_ingest._replaceable``);
3. ``ingest_event_logs`` of the log whose stored copy an older sparkpredict (0.2.0) measured:
   parse, check, commit of the new copy, drop of the old one (``compact=False``: an ingest of
   many logs compacts once, after the last; a compacted copy is not replaced, see
   docs/ingest.md).

    python benchmarks/ingest_replace.py [--runs 3000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
LOG = REPO / "tests" / "data" / "eventlogs" / "aqe_executors_killed_spark4.zstd"


def build(path: Path, n: int) -> tuple[str, float]:
    """The log ingested, then ``n - 1`` copies of its run under other ids, one ingest batch
    each; returns (the log's run id, seconds to build)."""
    from sparkpredict import store
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs
    from sparkpredict.store.io import INGEST_LABEL, new_batch_id

    t0 = time.perf_counter()
    rid = ingest_event_logs([LOG], path).files[0].run_id
    st = store.open(path)
    tables = {t: st.read(t, form="arrow") for t in ("runs", "stages", "tasks", "executors")}
    for i in range(1, n):
        other = f"app-copy-{i:06d}"
        renamed = {}
        for name, table in tables.items():
            col = table.schema.get_field_index("run_id")
            renamed[name] = table.set_column(col, "run_id", [[other] * table.num_rows])
        for col, value in (("source_fingerprint", f"copy-{i:06d}"), ("source_path", f"/logs/{other}")):
            runs = renamed["runs"]
            j = runs.schema.get_field_index(col)  # another log each: ingest finds logs by these
            renamed["runs"] = runs.set_column(j, runs.schema.field(j), [[value]])
        st.append(renamed, batch_id=new_batch_id(INGEST_LABEL + other))
    return rid, time.perf_counter() - t0


def as_measured_by(path: Path, rid: str, version: str) -> None:
    """Rewrite the run's stored copy as if sparkpredict ``version`` had ingested it."""
    import pyarrow.parquet as pq

    for f in (path / "runs").glob("*.parquet"):
        table = pq.read_table(f)
        if table.num_rows != 1 or table["run_id"][0].as_py() != rid:
            continue
        meta = table.schema.metadata
        i = table.schema.get_field_index("sparkpredict_version")
        table = table.set_column(i, table.schema.field(i), [[version]])
        pq.write_table(table.replace_schema_metadata(meta), f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    from sparkpredict import store
    from sparkpredict.capture.eventlog_ingest import (
        _replaceable,
        _StoredRun,
        ingest_event_logs,
    )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        rid, built_s = build(path, args.runs)
        print(f"built {args.runs} ingested runs in {built_s:.1f} s", flush=True)
        stored = _StoredRun("succeeded", 1, "eventlog", writer="0.2.0")
        before, now, replace = [], [], []
        for _ in range(args.repeats):
            st = store.open(path)
            t0 = time.perf_counter()
            rows = st.read("runs", form="arrow", columns=["run_id"], run_ids=[rid], all_rows=True)
            before.append(time.perf_counter() - t0)
            assert rows.num_rows == 1
            t0 = time.perf_counter()
            batch, why = _replaceable(st, rid, stored)
            now.append(time.perf_counter() - t0)
            assert batch is not None, why
            as_measured_by(path, rid, "0.2.0")
            t0 = time.perf_counter()
            f = ingest_event_logs([LOG], path, compact=False).files[0]
            replace.append(time.perf_counter() - t0)
            assert f.outcome == "ingested" and f.replaced is not None, (f.outcome, f.replaced)
            print(f"  read {before[-1]:.3f} s, check {now[-1]:.3f} s, replace {replace[-1]:.3f} s", flush=True)
        runs_files = len(list((path / "runs").glob("*.parquet")))

    b, c, r = (statistics.median(x) for x in (before, now, replace))
    load = os.getloadavg()[0]
    body = f"""## Replacing an ingested copy on a store of {args.runs:,} ingested logs

What an upgrade that measures input otherwise costs per log it reads again (0.3.0 re-reads every
log ingested before it). The store holds {args.runs:,} copies of one real Spark 4 run, each in an
ingest batch of its own ({runs_files:,} runs files; built in {built_s:.0f} s). Medians of
{args.repeats}, alternated; 1-minute load average {load:.1f} on 2 cores at the end.

| | median (s) |
|---|---|
| reference: the check's read before, every batch's runs file | {b:.3f} |
| the check now (`_replaceable`: the run's own batches, edits, compacted batches) | {c:.3f} |
| `ingest_event_logs` of that one log, replacing the copy an older sparkpredict measured (no compaction) | {r:.3f} |

The ingest of one log includes what an ingest call does once, however many logs it is given:
it reads what the store holds (every batch's runs rows, as the reference does). Per log of a
many-log ingest it adds the parse, the check, the commit of the new copy and the drop of the old
one.

The check now takes {c / b:.3f}x the reference's time ({b / max(c, 1e-9):.0f}x faster). Re-reading
{args.runs:,} such logs would spend about {b * args.runs / 60:.1f} minutes in the reference's read alone, and
{c * args.runs / 60:.1f} minutes in the check now.
"""
    print(body)
    write_section("ingest_replace", body)


if __name__ == "__main__":
    main()
