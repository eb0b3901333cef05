"""Mutation-audit gaps of event-log reading: codec stream framing (codecs.py), finding logs
(eventlog_files.py) and ingest outcomes (eventlog_ingest.py). Each test pins a boundary that a
mutant of that code passed every other test with."""
from __future__ import annotations

import errno
import io
import os
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from sparkpredict.capture.codecs import (
    CorruptStream,
    TruncatedStream,
    iter_decompressed,
)

_SNAPPY_HEAD = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def _lz4(blocks: list[tuple[int, bytes]]) -> bytes:
    """lz4-java LZ4BlockOutputStream: each (method, data) block, then the end mark."""
    out = b""
    for method, b in blocks:
        c = pa.Codec("lz4_raw").compress(b, asbytes=True) if method == 0x20 else b
        out += b"LZ4Block" + struct.pack("<Biii", method, len(c), len(b), 0) + c
    return out + b"LZ4Block" + struct.pack("<Biii", 0x10, 0, 0, 0)


def _snappy(*parts: bytes) -> bytes:
    """xerial SnappyOutputStream: the header, then length-prefixed raw snappy blocks."""
    out = _SNAPPY_HEAD
    for b in parts:
        c = pa.Codec("snappy").compress(b, asbytes=True)
        out += struct.pack(">i", len(c)) + c
    return out


def _read(data: bytes, codec: str) -> bytes:
    return b"".join(iter_decompressed(io.BytesIO(data), codec))


def test_a_one_byte_lz4_block_is_data_only_an_empty_one_ends_the_stream():
    """lz4-java flushes what is left at close: a log of 32 KiB + 1 bytes ends in a one-byte block
    (stored raw, as lz4-java stores a block that does not compress), which is data; only a block
    of original length 0 is the stream's end mark."""
    line = b'{"Event":"SparkListenerLogStart","Spark Version":"3.5.3"}\n'
    data = (line * 600)[: (32 << 10) + 1]
    stream = _lz4([(0x20, data[: 32 << 10]), (0x10, data[32 << 10:])])
    assert _read(stream, "lz4") == data
    # a one-byte compressed block too, between others, and streams concatenated after an end mark
    stream = _lz4([(0x20, b"{"), (0x20, line)]) + _lz4([(0x10, b"\n")])
    assert _read(stream, "lz4") == b"{" + line + b"\n"


def test_concatenated_snappy_streams_are_read_whole_and_a_bad_second_header_is_corrupt():
    """A log appended to after a restart of its writer holds a second xerial header: its blocks
    are the log's too. A header whose magic's second half is wrong is no such stream."""
    a, b = b'{"Event":"A"}\n', b'{"Event":"B"}\n'
    assert _read(_snappy(a) + _snappy(b), "snappy") == a + b
    bad = _snappy(a) + b"\x82SNAXXXX" + struct.pack(">ii", 1, 1)
    with pytest.raises(CorruptStream, match="bad snappy stream header"):
        _read(bad, "snappy")


def test_a_snappy_block_length_over_128_mib_is_corrupt_not_a_cut_stream():
    """xerial's blocks are 32 KiB; a length over 1 << 27 is garbage, which ingest must refuse
    (corrupt: the log fails) rather than take for a log cut while written (truncated: stored
    as an incomplete run)."""
    head = _snappy(b'{"Event":"A"}\n')
    with pytest.raises(CorruptStream, match="bad snappy block length"):
        _read(head + struct.pack(">i", (1 << 27) + 1) + b"x" * 100, "snappy")
    # at the limit, a block cut short is a cut stream, after the blocks before it were read
    got: list[bytes] = []
    with pytest.raises(TruncatedStream):
        got.extend(iter_decompressed(io.BytesIO(head + struct.pack(">i", 1 << 27) + b"x" * 100), "snappy"))
    assert b"".join(got) == b'{"Event":"A"}\n'


def test_an_lz4_block_over_64_mib_is_corrupt_not_a_cut_stream():
    """lz4-java's blocks are at most 32 MiB; an original length over 1 << 26 is garbage (the log
    fails), not a block cut while written (stored as an incomplete run)."""
    head = _lz4([(0x20, b'{"Event":"A"}\n')])[:-len(b"LZ4Block") - 13]  # without its end mark
    with pytest.raises(CorruptStream, match="bad LZ4 block header"):
        _read(head + b"LZ4Block" + struct.pack("<Biii", 0x20, 100, (1 << 26) + 1, 0) + b"x" * 10, "lz4")
    got: list[bytes] = []
    with pytest.raises(TruncatedStream):
        got.extend(iter_decompressed(io.BytesIO(head + b"LZ4Block" + struct.pack("<Biii", 0x20, 100, 1 << 26, 0)
                                                + b"x" * 10), "lz4"))
    assert b"".join(got) == b'{"Event":"A"}\n'


# ---- eventlog_files.py ----------------------------------------------------------------------

def test_a_logs_app_hint_drops_its_codec_and_inprogress_suffixes_only(tmp_path):
    """Ingest looks a log's run up by the application id in its name before reading it (a log
    of a stored run is skipped unread): the codec and ``.inprogress`` suffixes are no part of
    it, and another suffix (a user's own name) is kept."""
    from sparkpredict.capture.eventlog_files import single_log

    for name, hint in (("app-20240101-0001_1.lz4.inprogress", "app-20240101-0001_1"),
                       ("local-1532512550423.zstd", "local-1532512550423"),
                       ("local-1532512550423.ZST", "local-1532512550423"),
                       ("local-1532512550423", "local-1532512550423"),
                       ("nightly.v2.json", "nightly.v2.json"),
                       ("app-1.inprogress", "app-1")):
        assert single_log(str(tmp_path / name)).app_hint == hint, name


def test_a_logs_fingerprint_is_the_one_stores_already_hold(tmp_path):
    """``source_fingerprint`` is kept in the store: the same file (name, size, mtime, first
    64 KiB) must give the fingerprint earlier versions stored, or every log ingested before an
    upgrade stops reading as ``unchanged``. Bytes after the first 64 KiB are not hashed."""
    from sparkpredict.capture.eventlog_files import fingerprint, single_log

    path = tmp_path / "app-1.zstd"
    data = bytes(range(256)) * 400  # 100 KiB
    path.write_bytes(data)
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    first = fingerprint(single_log(str(path)))
    assert first == "34fff6f42256cf5a3ec40616"
    path.write_bytes(data[: 70 << 10] + b"\xff" + data[(70 << 10) + 1:])  # same size, past 64 KiB
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert fingerprint(single_log(str(path))) == first
    path.write_bytes(b"\xff" + data[1:])  # within the head
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert fingerprint(single_log(str(path))) != first


def test_a_rolling_logs_gap_names_up_to_five_missing_files_then_dots(tmp_path):
    from sparkpredict.capture.eventlog_files import rolling_log

    def gap(last: int) -> str:
        folder = tmp_path / f"eventlog_v2_app-{last}"
        folder.mkdir()
        for i in (1, last):
            (folder / f"events_{i}_app-{last}.zstd").write_bytes(b"")
        (folder / f"appstatus_app-{last}").write_bytes(b"")
        src = rolling_log(str(folder))
        assert src.error is not None and [os.path.basename(f) for f in src.files] == \
            [f"events_1_app-{last}.zstd", f"events_{last}_app-{last}.zstd"]
        return src.error.message

    five = ", ".join(f"events_{i}" for i in range(2, 7))
    assert f"{five} missing between events_1 and events_7:" in gap(7)
    assert f"{five} ... missing between events_1 and events_8:" in gap(8)
    assert "events_2 missing between events_1 and events_3:" in gap(3)


def test_a_path_whose_stat_fails_is_that_logs_error_or_the_rolling_file_error_it_has(tmp_path):
    """A path that exists but whose stat fails (here a link loop: ELOOP, as a folder this user
    cannot enter gives EACCES) is one log's error, not a missing path; a file of a rolling log
    keeps the error that says to ingest its folder."""
    from sparkpredict.capture.eventlog_files import find_logs

    loop = tmp_path / "app-1.zstd"
    os.symlink(loop, loop)
    (src,) = find_logs([loop])
    assert src.error is not None and "cannot read" in src.error.message
    assert os.strerror(errno.ELOOP) in src.error.message  # the cause, named as the system words it
    folder = tmp_path / "eventlog_v2_app-2"
    folder.mkdir()
    part = folder / "events_1_app-2.zstd"
    os.symlink(part, part)
    (src,) = find_logs([part])
    assert src.error is not None and "one file of the rolling event log" in src.error.message
    assert src.rolling_folder == str(folder)


# ---- eventlog_ingest.py ---------------------------------------------------------------------

def test_an_unexpected_error_reading_one_log_fails_that_log_and_the_others_are_ingested(tmp_path, monkeypatch):
    """The catch-all of a bug in the reader (not a bad log): that log ``failed`` with the
    exception named and how to report it, and the ingest goes on with the next log."""
    from sparkpredict import store
    from sparkpredict.capture import eventlog_ingest

    logs = Path(__file__).parent / "data" / "eventlogs"
    for name in ("sparklens_local-1532512550423.json", "rp_nosql_eventlog.json"):
        shutil.copy(logs / name, tmp_path / name)
    real = eventlog_ingest._parse_source

    def parse(src):
        if src.path.endswith("sparklens_local-1532512550423.json"):
            raise ZeroDivisionError("a bug")
        return real(src)

    monkeypatch.setattr(eventlog_ingest, "_parse_source", parse)
    st = store.open(tmp_path / "st", create=True)
    report = eventlog_ingest.ingest_event_logs(
        [tmp_path / "sparklens_local-1532512550423.json", tmp_path / "rp_nosql_eventlog.json"], st)
    bad, good = report.files
    assert bad.outcome == "failed" and bad.error.endswith("ZeroDivisionError: a bug")
    assert "sparkpredict -v ingest" in bad.fix and bad.run_id is None and bad.stages is None
    assert good.outcome == "ingested" and good.tasks == len(st.tasks()) > 0
    assert report.files_failed == report.files_ingested == 1 and len(st.runs()) == 1
