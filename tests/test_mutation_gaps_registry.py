"""Behaviours of the model registry (registry.py, registry_commit.py) that its first mutation
audit found no test pinning: each test here fails on one-operator changes of the two modules
(a dropped guard, a swapped comparison or constant) that the registry's JVM-free tests let
pass: a registry of another version read as this one's, foreign or malformed artifacts and
failed-fit records, a commit of nothing, pruning, the (job, kind, signature) key, an
unwritable registry folder, the day a running marker protects, the merge's rule for failed-fit
records and its round that has nothing to add, mounts without flock, the lock's polling, and
remote stores never locked through a local path. Real stores and Parquet snapshots under
tmp_path (S3: moto's server, as tests/test_remote_store.py), artifacts written as a retrain
writes them (``_reg_row``); no JVM, no timings."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from test_mutation_gaps_persist import _reg_row
from test_remote_store import HISTORY, s3  # noqa: F401  (s3: its module-scoped S3 server fixture)

from sparkpredict import registry as R
from sparkpredict import registry_commit as RC
from sparkpredict import store
from sparkpredict.errors import ModelError, StoreError


@pytest.fixture
def st(tmp_path):
    return store.open(tmp_path / "st", create=True)


def _snapshot_files(st) -> list[str]:
    return sorted(n for n in os.listdir(f"{st.root}/_models/registry") if n.startswith("part-"))


# ---- reading: a registry of another version is refused ------------------------------------------
def test_a_snapshot_of_another_registry_version_is_refused_with_a_forced_rebuild(st):
    """A registry column that changed meaning (REGISTRY_VERSION bumped) must not be read as this
    version's: the reader refuses it and names the rebuild; a snapshot without the key is version 0."""
    name = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    path = f"{st.root}/_models/registry/{name}"
    table = pq.read_table(path)
    for meta, said in (({b"registry_version": b"2"}, "has version 2; this sparkpredict reads 1"),
                       (None, "has version 0; this sparkpredict reads 1")):
        pq.write_table(table.replace_schema_metadata(meta), path)
        with pytest.raises(ModelError, match=said) as err:
            R.read_registry(st)
        assert err.value.fix == f"run `sparkpredict retrain --store {st.path} --force` to rebuild it"


def test_an_artifact_that_is_not_json_names_the_refit_of_its_job_or_of_every_job(tmp_path):
    """The fix is the refit of the artifact's job where the reader knows it, of every job where
    not; the store path and the job are quoted for the shell."""
    st = store.open(tmp_path / "my st", create=True)
    row = _reg_row(st, "etl daily", R.new_retrain_id())
    with open(f"{st.root}/_models/{row['artifact']}", "w") as f:
        f.write("{not json")
    quoted = f"'{st.path}'"
    with pytest.raises(ModelError, match="is not valid JSON") as err:
        R.read_artifact(st, row["artifact"])
    assert err.value.fix == f"run `sparkpredict retrain --store {quoted} --force` to refit every job"
    with pytest.raises(ModelError, match="is not valid JSON") as err:
        R.read_artifact(st, row["artifact"], "etl daily")
    assert err.value.fix == f"refit it: `sparkpredict retrain --store {quoted} --job 'etl daily' --force`"


def test_json_that_is_not_a_sparkpredict_artifact_is_refused_as_foreign(st):
    """A JSON file of another format in the artifact's place (even one carrying this artifact
    version), or JSON that is no object at all, is refused as foreign, with the fix to remove it."""
    row = _reg_row(st, "a-job", R.new_retrain_id())
    path = f"{st.root}/_models/{row['artifact']}"
    for doc in ({"format": "someone-elses", "artifact_version": R.ARTIFACT_VERSION, "job": "a-job"},
                [R.ARTIFACT_FORMAT]):
        with open(path, "w") as f:
            json.dump(doc, f)
        with pytest.raises(ModelError, match="is not a sparkpredict model artifact") as err:
            R.read_artifact(st, row["artifact"], "a-job")
        assert err.value.fix == "remove foreign files from the store's _models folder"


def test_the_runs_fingerprint_leaves_out_runs_still_running_and_rows_without_a_run():
    """docs/retrain.md: a run in flight is no part of what a model learns from (its row changes
    with every flush); its final row is. sha256 over the sorted ``run_id:updated_ms`` lines."""
    import hashlib

    raw = pd.DataFrame({"run_id": ["b", "a", None, "c"], "updated_ms": [20, 10, 30, 40],
                        "status": ["failed", "succeeded", "succeeded", "running"]})
    want = hashlib.sha256(b"a:10\nb:20").hexdigest()
    assert R.runs_fingerprint(raw) == want
    assert R.runs_fingerprint(raw.drop(columns="status")) == hashlib.sha256(b"a:10\nb:20\nc:40").hexdigest()
    ended = raw.assign(status=["failed", "succeeded", "succeeded", "succeeded"])
    assert R.runs_fingerprint(ended) == hashlib.sha256(b"a:10\nb:20\nc:40").hexdigest() != want


# ---- failed fits: only well-formed records count --------------------------------------------------
def _with_failed(raw: bytes | None) -> pa.Table:
    meta = {b"registry_version": b"1"} | ({R.FAILED_FITS_KEY: raw} if raw is not None else {})
    return R.REGISTRY_SCHEMA.empty_table().replace_schema_metadata(meta)


def test_failed_fit_records_keep_only_dicts_of_a_named_job_and_a_failed_kind():
    """A record the reader cannot trust is dropped (its fit is tried again), never raised, and a
    well-formed one beside it is kept."""
    good = {"job": "a", "model_kind": "failed:runtime", "trained_on": "fp", "error": "boom"}
    recs = [good, "failed:runtime", {"job": 7, "model_kind": "failed:stage"},
            {"job": "b", "model_kind": "runtime"}, {"model_kind": "failed:stage"}, {"job": "c"}]
    assert R.failed_fits(_with_failed(json.dumps(recs).encode())) == [good]
    for raw in (None, b"", b"not json", json.dumps(good).encode(), b"null"):
        assert R.failed_fits(_with_failed(raw)) == [], raw


# ---- committing -----------------------------------------------------------------------------------
def test_committing_nothing_writes_no_snapshot_and_names_the_current_one(st):
    """A retrain that refit nothing commits nothing: no new snapshot (which would push an older,
    rollback-able one out of the kept ones), and the answer is the snapshot that stays current."""
    assert RC.commit_update(st, [], "r0") is None
    assert not os.path.exists(f"{st.root}/_models/registry")
    first = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    assert RC.commit_update(st, [], "r2") == first
    assert _snapshot_files(st) == [first]


def test_the_newest_ten_snapshots_are_kept_and_older_ones_pruned(st):
    """docs: "Snapshots are kept (the newest KEEP_SNAPSHOTS) so a bad retrain can be rolled back"."""
    names = [RC.commit_update(st, [_reg_row(st, f"job-{i:02d}", R.new_retrain_id())], f"r{i:02d}")
             for i in range(12)]
    assert R.KEEP_SNAPSHOTS == 10
    assert _snapshot_files(st) == names[2:]
    assert sorted(R.read_registry(st).job) == [f"job-{i:02d}" for i in range(12)]


def test_a_whole_registry_of_two_rows_of_one_key_is_refused_and_not_written(st):
    rid = R.new_retrain_id()
    row = _reg_row(st, "a-job", rid)
    with pytest.raises(ValueError, match="registry rows must be unique per \\(job, model_kind, signature\\)"):
        RC.commit_registry(st, pd.DataFrame([row, {**row, "version": 2}]), rid)
    assert R.current_snapshot(st) is None


def test_rows_of_one_job_and_kind_with_other_signatures_are_other_models(st):
    """The registry's key is (job, model_kind, signature): a second signature's row is another
    model (version 1, kept beside the first), and a row without a signature is the signature ""."""
    rid = R.new_retrain_id()
    rows = [{**_reg_row(st, "a-job", rid), "signature": sig} for sig in ("s1", "s2")]
    RC.commit_update(st, rows, rid)
    reg = R.read_registry(st)
    assert sorted(zip(reg.signature, reg.version)) == [("s1", 1), ("s2", 1)]
    bare = _reg_row(st, "b-job", rid)
    del bare["signature"]
    RC.commit_update(st, [bare], rid)
    RC.commit_update(st, [_reg_row(st, "b-job", R.new_retrain_id())], "r3")  # signature "": the same model
    b = R.read_registry(st).query("job == 'b-job'")
    assert list(b.signature) == [""] and list(b.version) == [2]


def test_commit_registry_replaces_the_registry_and_names_the_new_snapshot(st):
    """`commit_registry` writes the rows given as the whole registry (no merge with the current one)."""
    RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    RC.commit_update(st, [_reg_row(st, "b-job", R.new_retrain_id())], "r2")
    reg = R.read_registry(st)
    name = RC.commit_registry(st, reg[reg.job == "b-job"], "r3")
    assert name == R.current_snapshot(st) and name.endswith("-r3.parquet")
    assert list(R.read_registry(st).job) == ["b-job"]


# ---- a registry a retrain could not commit to -----------------------------------------------------
@contextlib.contextmanager
def _unwritable(folder):
    """``folder`` not writable by this user: mode 555, or for root (whom modes do not stop) the
    immutable attribute, which access(2) reports as not writable for root too."""
    if os.geteuid() != 0:
        os.chmod(folder, 0o555)
        try:
            yield
        finally:
            os.chmod(folder, 0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True,
                                                          check=False).returncode != 0:
        pytest.skip("running as root, and chattr +i is not available here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_registry_folder_this_user_cannot_write_is_refused_naming_the_deepest_one_there(st):
    """The folder named is the one the retrain would write into first: the store's own folder
    before any retrain, its registry folder after one."""
    with _unwritable(st.root), pytest.raises(StoreError) as err:
        RC.check_writable(st)
    assert err.value.message == (f"cannot write to the model registry of store {st.path!r}: {st.root} is not "
                                 "writable by this user")
    assert err.value.fix == "fix its permissions (chmod u+w), or retrain as the store's owner"
    RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    RC.check_writable(st)
    with (_unwritable(f"{st.root}/_models/registry"),
          pytest.raises(StoreError, match=f": {st.root}/_models/registry is not writable by this user")):
        RC.check_writable(st)


# ---- leftovers: how long a retrain's running marker protects its files -------------------------------
def test_a_marker_protects_its_retrains_files_for_a_day_and_no_longer(st):
    """RUNNING_MAX_AGE_S: a retrain marked running 23.5 h ago may still be fitting; one marked
    24.5 h ago was killed, and its marker and artifacts are leftovers."""
    base = f"{st.root}/_models"
    files = {}
    for hours in (23.5, 24.5):
        rid = R.new_retrain_id()
        RC.mark_running(st, rid)
        art = _reg_row(st, f"job-{hours}", rid)["artifact"]
        files[hours] = [f"{base}/running/{rid}", f"{base}/{art}"]
        then = time.time() - hours * 3600
        for f in files[hours]:
            os.utime(f, (then, then))
    os.makedirs(f"{base}/running/notes")  # not a marker, nor a file clean may remove
    then = time.time() - 24.5 * 3600
    os.utime(f"{base}/running/notes", (then, then))
    assert RC.orphans(st, min_age_s=600) == RC.orphans(st, min_age_s=1) == sorted(files[24.5])
    assert RC.orphans(st, min_age_s=0) == sorted(files[23.5] + files[24.5])  # no writer running: none protects


# ---- the merge after the fact: a failed fit's record goes only when its model was fitted since ----
@pytest.mark.parametrize(("model_ms", "kept"), [(1, True), (5, False)])
def test_the_merge_keeps_a_failed_fits_record_newer_than_its_model(st, monkeypatch, model_ms, kept):
    """A model fitted at ``model_ms`` whose refit failed at 5 ms keeps its record through a merge
    (the model is not what its last fit did: the record keeps the retrain from trying again on
    the same runs); a model fitted at the record's time or later drops it. B commits another
    job inside A's commit, where no lock can be taken (as in test_registry)."""
    monkeypatch.setattr(RC, "fcntl", None)
    RC.commit_update(st, [{**_reg_row(st, "c-job", "c0"), "trained_at_ms": model_ms}], "c0")
    a_id, b_id = R.new_retrain_id(), R.new_retrain_id()
    c_fail = {"job": "c-job", "model_kind": R.failed_kind(R.KIND_RUNTIME), "signature": "", "version": 1,
              "trained_at_ms": 5, "trained_on": "fp-c", "artifact": None, "retrain_id": a_id,
              "registry_version": R.REGISTRY_VERSION, "error": "boom"}
    real_write = RC._write_snapshot
    b_done: list = []

    def b_in_between(st_, rows, retrain_id, after):
        if retrain_id == a_id and not b_done:
            b_done.append(RC.commit_update(st_, [_reg_row(st_, "b-job", b_id)], b_id))
        return real_write(st_, rows, retrain_id, after)

    monkeypatch.setattr(RC, "_write_snapshot", b_in_between)
    RC.commit_update(st, [c_fail], a_id)
    reg, failures = R.read_registry_state(st)
    assert b_done and sorted(reg.job) == ["b-job", "c-job"]
    assert list(failures) == ([("c-job", "runtime")] if kept else [])


# ---- a file system that refuses flock -------------------------------------------------------------
class _RefusingFlock:
    """The fcntl module as a mount that refuses flock (some network file systems) sees it: every
    flock call fails with ``errno_``; the store and its files stay the real, local ones."""

    def __init__(self, errno_: int):
        import fcntl

        self.LOCK_EX, self.LOCK_NB, self.LOCK_UN = fcntl.LOCK_EX, fcntl.LOCK_NB, fcntl.LOCK_UN
        self.errno_ = errno_

    def flock(self, fd, op):
        raise OSError(self.errno_, os.strerror(self.errno_))


@pytest.mark.parametrize("refused", ["ENOLCK", "EOPNOTSUPP", "ENOSYS", "EBADF"])
def test_a_mount_without_locks_commits_unlocked_with_a_warning(st, monkeypatch, caplog, refused):
    import errno

    monkeypatch.setattr(RC, "fcntl", _RefusingFlock(getattr(errno, refused)))
    with caplog.at_level("WARNING", logger="sparkpredict.registry_commit"):
        name = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    assert R.current_snapshot(st) == name and list(R.read_registry(st).job) == ["a-job"]
    assert "the file system refuses a lock on" in caplog.text and "committing without it" in caplog.text


def test_a_lock_refused_for_another_reason_stops_the_commit_with_a_fix(st, monkeypatch):
    import errno

    RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    before = _snapshot_files(st)
    monkeypatch.setattr(RC, "fcntl", _RefusingFlock(errno.EIO))
    with pytest.raises(StoreError, match="cannot lock the model registry of store") as err:
        RC.commit_update(st, [_reg_row(st, "b-job", R.new_retrain_id())], "r2")
    assert err.value.fix == "fix the store's permissions, then run the retrain again"
    assert _snapshot_files(st) == before


def test_a_commit_waiting_for_the_lock_polls_it_often_and_without_spinning(st, monkeypatch):
    """The lock is polled (a blocking flock could not time out): a waiting commit must take it
    soon after its holder lets go, not at the end of its timeout, and must not spin a CPU
    meanwhile: every pause is above zero and at most 50 ms, and none shorter than the one
    before. The holder here is this test's own open file of the lock (flock locks an open
    file, so it conflicts with the commit's in this process too); the sleeps are counted, not timed."""
    import fcntl
    import types

    RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    fd = os.open(f"{st.root}/_models/registry/{RC.LOCK_NAME}", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    pauses: list[float] = []

    def sleep(s):
        pauses.append(s)
        if len(pauses) == 8:  # the holder lets go
            fcntl.flock(fd, fcntl.LOCK_UN)

    monkeypatch.setattr(RC, "time", types.SimpleNamespace(time=time.time, monotonic=time.monotonic, sleep=sleep))
    try:
        name = RC.commit_update(st, [_reg_row(st, "b-job", R.new_retrain_id())], "r2")
    finally:
        os.close(fd)
    assert len(pauses) == 8 and all(0 < p <= 0.05 for p in pauses) and pauses == sorted(pauses)
    assert R.current_snapshot(st) == name and sorted(R.read_registry(st).job) == ["a-job", "b-job"]


def test_a_commit_to_a_remote_store_takes_no_lock_on_a_local_path(s3, tmp_path, monkeypatch):  # noqa: F811
    """flock covers local stores only: a commit to S3 goes without it (the merge after the fact
    is all there is), and never makes the store's path as local folders to lock a file there."""
    monkeypatch.chdir(tmp_path)
    remote = s3("registry-lock")
    pafs.copy_files(str(HISTORY), pafs.FileSystem.from_uri(remote)[1],
                    destination_filesystem=pafs.FileSystem.from_uri(remote)[0])
    st = store.open(remote)
    name = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    assert R.current_snapshot(st) == name and list(R.read_registry(st).job) == ["a-job"]
    assert os.listdir(tmp_path) == []


def test_a_merge_round_writes_nothing_when_the_newest_snapshot_already_holds_every_row(st, monkeypatch):
    """C commits right after A's rename, on top of A's snapshot: when A looks for commits made
    meanwhile it finds C's, which already holds A's rows and its own. A writes no merge of its
    own (it would be C's rows again, one more snapshot pushing an older one out of the kept ten)."""
    monkeypatch.setattr(RC, "fcntl", None)
    a_id, c_id = R.new_retrain_id(), R.new_retrain_id()
    real_write = RC._write_snapshot
    c_done: list = []

    def c_after_a(st_, rows, retrain_id, after):
        name = real_write(st_, rows, retrain_id, after)
        if retrain_id == a_id and not c_done:
            c_done.append(RC.commit_update(st_, [_reg_row(st_, "c-job", c_id)], c_id))
        return name

    monkeypatch.setattr(RC, "_write_snapshot", c_after_a)
    a_snap = RC.commit_update(st, [_reg_row(st, "a-job", a_id)], a_id)
    assert c_done and _snapshot_files(st) == sorted([a_snap, c_done[0]])
    assert R.current_snapshot(st) == c_done[0] and sorted(R.read_registry(st).job) == ["a-job", "c-job"]
