"""Property test: corrupted, truncated and garbled logs never crash an ingest or leave partial rows.

Each generated file must give either rows plus warnings, or exactly one clear error naming the
file (also for a log that lost events before its end: ``ParsedLog.damage``); the store then
holds the whole log's rows or nothing of it.
"""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkpredict import store
from sparkpredict.capture.eventlog import NotWrittenYet, parse_event_log
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.errors import IngestError

LOGS = Path(__file__).parent / "data" / "eventlogs"
BASES = {
    "spark2": (LOGS / "sparklens_local-1532512550423.json").read_bytes(),
    "spark3": (LOGS / "rp_nosql_eventlog.json").read_bytes(),
}
TASK_ENDS = {k: v.count(b'"Event":"SparkListenerTaskEnd"') for k, v in BASES.items()}


@st.composite
def damaged_logs(draw):
    base = draw(st.sampled_from(sorted(BASES)))
    lines = BASES[base].splitlines()
    for _ in range(draw(st.integers(0, 3))):  # drop, duplicate or garble whole lines
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "dup", "garbage", "cut"]))
        if action == "drop":
            del lines[i]
        elif action == "dup":
            lines.insert(i, lines[i])
        elif action == "garbage":
            lines.insert(i, draw(st.binary(max_size=80)).replace(b"\n", b""))
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        if not lines:
            lines = [b""]
    data = bytearray(b"\n".join(lines) + b"\n")
    for _ in range(draw(st.integers(0, 4))):  # flip bytes anywhere
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):  # cut the file (a log still being written, a partial copy)
        data = data[: draw(st.integers(0, len(data)))]
    suffix = draw(st.sampled_from(["", ".zstd", ".lz4", ".snappy", ".lzf", ".inprogress"]))
    payload = bytes(data)
    if suffix not in ("", ".inprogress") and draw(st.integers(0, 4)):  # mostly a valid stream
        payload = encode(payload, suffix[1:])
        if draw(st.booleans()):  # ... cut short
            payload = payload[: draw(st.integers(0, len(payload)))]
    return base, suffix, payload


def encode(data: bytes, codec: str, block: int = 32 << 10) -> bytes:
    """Write ``data`` in the stream format Spark's codec would (see sparkpredict.capture.codecs)."""
    blocks = [data[i: i + block] for i in range(0, len(data), block)]
    if codec == "zstd":
        return pa.compress(data, "zstd", asbytes=True)
    if codec == "lz4":  # lz4-java LZ4BlockOutputStream: compressed (0x20) blocks, then an end mark
        out = b""
        for b in blocks:
            c = pa.Codec("lz4_raw").compress(b, asbytes=True)
            out += b"LZ4Block" + struct.pack("<Biii", 0x20, len(c), len(b), 0) + c
        return out + b"LZ4Block" + struct.pack("<Biii", 0x10, 0, 0, 0)
    if codec == "snappy":  # xerial SnappyOutputStream
        out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
        for b in blocks:
            c = pa.Codec("snappy").compress(b, asbytes=True)
            out += struct.pack(">i", len(c)) + c
        return out
    # Ning LZFOutputStream, stored (uncompressed) chunks of at most 64 KiB
    return b"".join(b"ZV\x00" + struct.pack(">H", len(b)) + b for b in blocks)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_logs())
def test_damaged_logs_give_rows_or_one_error(case):
    base, suffix, payload = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"app-fuzz{suffix}"
        path.write_bytes(payload)
        # The pure parser: a ParsedLog or an IngestError, never another exception.
        try:
            parsed = parse_event_log(path)
        except IngestError as exc:
            parsed = None
            assert path.name in exc.message
            not_started = isinstance(exc, NotWrittenYet)
            assert not not_started or suffix == ".inprogress"
        else:
            not_started = False
        s = store.open(Path(tmp) / "st", create=True)
        report = ingest_event_logs([path], s)  # never raises for a bad file
        assert report.files_seen == 1
        (outcome,) = report.files
        runs, stages, tasks = s.runs(), s.stages(), s.tasks()
        if not_started:  # an in-progress log without its start yet: skipped, for a later ingest
            assert outcome.outcome == "pending" and outcome.error is None and outcome.warnings
            assert len(runs) == len(stages) == len(tasks) == 0
        elif parsed is None or parsed.damage:  # unreadable, or events lost before the end
            assert outcome.outcome == "failed" and outcome.error and path.name in outcome.error
            assert len(runs) == len(stages) == len(tasks) == 0  # nothing partial
        else:
            assert outcome.outcome == "ingested" and outcome.error is None
            # killed: a dropped JobEnd leaves its job running at the application's end, which
            # is how a log tells a run cut short (eventlog_run.run_status); no signal is logged
            assert len(runs) == 1 and runs.status.iloc[0] in ("succeeded", "failed", "incomplete", "killed")
            if runs.status.iloc[0] == "killed":
                assert "still running at the application's end" in runs.error_message.iloc[0]
            assert len(stages) == parsed.tables["stages"].num_rows == outcome.stages
            assert len(tasks) == parsed.tables["tasks"].num_rows == outcome.tasks
            # Byte flips can split or garble lines, never invent whole task events.
            assert len(tasks) <= TASK_ENDS[base] + 3
            if suffix == ".inprogress":
                assert runs.status.iloc[0] == "incomplete"
