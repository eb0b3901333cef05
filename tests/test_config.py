"""``config.resolve_store``: local paths and ``file:`` URIs in every form Hadoop writes them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkpredict.config import resolve_store
from sparkpredict.errors import StoreError

EVENTLOG = Path(__file__).parent / "data" / "eventlogs" / "sparklens_local-1532512550423.json"


def test_file_uris_are_local_paths(tmp_path, monkeypatch):
    """``file:/p`` (Hadoop's own form) used to become a folder named ``file:`` under the cwd."""
    monkeypatch.chdir(tmp_path)
    p = str(tmp_path / "store")
    for uri in (f"file:{p}", f"file://{p}", f"file://localhost{p}", f"FILE://{p}", f"file:////{p}"):
        assert resolve_store(uri) == p, uri
    assert resolve_store("rel") == str(tmp_path / "rel")
    assert resolve_store("hdfs:///apps/store") == "hdfs:///apps/store"
    assert resolve_store("s3a://bucket/store") == "s3a://bucket/store"
    # Hadoop's Path (the listener's) keeps escapes: file:///a%20b is the folder "a%20b", which
    # is refused unless it exists (tests/test_names_paths_review.py)
    (tmp_path / "a%20b").mkdir()
    assert resolve_store(f"file://{tmp_path}/a%20b") == f"{tmp_path}/a%20b"
    assert not (tmp_path / "file:").exists()


@pytest.mark.parametrize("uri,needle", [
    ("file://otherhost/tmp/s", "names the host 'otherhost'"),
    ("file:store", "without an absolute path"),
])
def test_file_uris_that_are_not_local_are_errors(uri, needle):
    with pytest.raises(StoreError, match=needle):
        resolve_store(uri)


def test_callers_take_the_file_uri_as_the_local_store(tmp_path, monkeypatch, capsys, listener_jar):
    from sparkpredict import store as store_mod
    from sparkpredict.capture.listener import listener_conf
    from sparkpredict.cli import main

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s"
    assert main(["ingest", str(EVENTLOG), "--store", f"file:{store}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["store"] == str(store)
    assert not (tmp_path / "file:").exists()
    assert store_mod.open(f"file://localhost{store}").path == str(store)
    assert len(store_mod.open(f"file:{store}").runs()) == 1
    assert listener_conf(store=f"file:{store}")["spark.sparkpredict.store"] == store.as_uri()
    assert main(["store", "summary", "--store", "file://elsewhere/x"]) == 2
    err = capsys.readouterr().err
    assert "error: the store 'file://elsewhere/x' names the host" in err and "fix: write file:///x" in err
