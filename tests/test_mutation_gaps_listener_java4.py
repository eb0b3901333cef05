"""What the third mutation pass over the JVM listener's Java found unpinned: StoreWriter's check
of a folder that is not yet a store, the Flusher's second removal of an ingested copy of the
run (at the last write, for a copy stored after the first), the host plugin forgetting an
earlier application's driver reading, and ListenerSettings' smallest declared size.
"""
from __future__ import annotations

import threading

import pyarrow.parquet as pq
import pytest
from test_listener_fs_closed import ONE_JOB, _run_job
from test_listener_store_faults import _committed, _error_of_one_job, _wait_for
from test_mutation_gaps_listener_java import FAILED_RENAME_FS
from test_mutation_gaps_listener_java2 import _replayed_edit
from test_mutation_gaps_store import _runs

from sparkpredict import store as store_mod
from sparkpredict.store import io as store_io
from sparkpredict.store import schema as S

pytestmark = pytest.mark.spark


def test_hidden_files_make_no_store_foreign_and_a_refusal_names_five_files(spark_app, tmp_path):
    """A folder holding only a hidden file (another writer's file in flight, a .DS_Store) becomes
    the store; one holding six other files is refused naming the first five and "...".
    Mutants: StoreWriter.init counting hidden names as foreign; naming four of them."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / ".DS_Store").write_bytes(b"finder")
    assert _error_of_one_job(spark_app, tmp_path, hidden) is None
    assert len(store_mod.open(hidden).runs()) == 1
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for name in "abcdef":
        (foreign / f"{name}.jpg").write_bytes(b"photo")
    err = _error_of_one_job(spark_app, tmp_path, foreign)
    assert err is not None and "it holds other files (a.jpg, b.jpg, c.jpg, d.jpg, e.jpg, ...)" in err, err


def _batches(store) -> list[str]:
    return sorted(p.name for p in (store / S.COMMIT_TABLE).glob("part-*.parquet"))


def test_an_ingested_copy_stored_after_the_listener_s_first_write_is_removed_by_its_last(spark_app, tmp_path):
    """A cron ingest of the run's event log that lands after the listener's first write (which
    removes the copies before it) would leave the run stored twice: the last write removes it.
    Mutant: Flusher.write removing ingested copies after the first write only."""
    store = tmp_path / "store"
    with spark_app(store, job="ingested-late", conf={"spark.sparkpredict.flushIntervalMs": "0"}) as spark:
        sc = spark.sparkContext
        app = sc.applicationId
        for n in (1, 2):
            assert sc.parallelize(range(10), 2).count() == 10
            # the writer writes each job's batch at once (interval 0); the second one written means
            # the first write's removal of copies is over (one thread does both, in that order)
            assert _wait_for(lambda n=n: len(_batches(store)) >= n, 60)
        runs = pq.read_table(store / S.COMMIT_TABLE / _batches(store)[-1])
        copy = store_mod.open(store).append({S.COMMIT_TABLE: runs}, batch_id=store_io.new_batch_id("ingest-" + app))
        assert copy in store_mod.open(store).committed_batches()
    assert [b for b in _batches(store) if "-ingest-" in b] == []
    (run,) = store_mod.open(store).runs().itertuples()
    assert (run.run_id, run.num_jobs) == (app, 2)


def test_host_sampling_is_on_by_default_and_an_application_with_it_off_takes_no_reading_of_the_one_before(
        spark_app, tmp_path):
    """The plugin samples without hostSampleIntervalMs set. The driver's reading of an
    application that sampled was taken again at the end of the next one in the JVM, which had
    sampling off (hostSampleIntervalMs=0): a host sample it never asked for.
    Mutants: HostMetricsPlugin.interval defaulting to 0 (off); its driver init keeping the
    earlier driverReading; ListenerSettings.millis refusing 0 (read as the default, on)."""
    with spark_app(tmp_path / "sampled", job="sampled") as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
    assert len(store_mod.open(tmp_path / "sampled").read("host_samples")) >= 1  # at least the last reading
    with spark_app(tmp_path / "off", job="off", conf={"spark.sparkpredict.hostSampleIntervalMs": "0"}) as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
        # the listener's parser of spark.sparkpredict.inputBytes takes one byte, as Python's does
        # (mutant: ListenerSettings.declaredSize refusing 1)
        parse = spark._jvm.io.sparkpredict.SparkPredictListener.declaredSize
        assert [parse(t) for t in ("1", "1b", "1.4")] == [1, 1, 1]
    st = store_mod.open(tmp_path / "off")
    assert len(st.runs()) == 1 and len(st.read("host_samples")) == 0


def _blocked_store(tmp_path) -> tuple:
    """(a file, a store path under it): every write fails until the file goes."""
    parent = tmp_path / "blocked"
    parent.write_text("a file where the store's parent folder should be")
    return parent, parent / "store"


def _unblock_once_it_says(listener, parent, words: str, said: list) -> None:
    """Remove the file ``parent`` once the listener's error holds ``words`` (kept in ``said``)."""
    err = _wait_for(lambda: (e := listener.lastError()) and words in e and e, 60)
    if err:
        said.append(err)
        parent.unlink()


def _stopped_unblocking(spark, parent, words: str) -> str | None:
    """Stop ``spark``'s application, unblocking its store once the listener says ``words``;
    the listener's error after the stop."""
    said: list[str] = []
    listener = spark.sparkContext._jvm.io.sparkpredict.SparkPredictListener
    watcher = threading.Thread(target=_unblock_once_it_says, args=(listener, parent, words, said))
    watcher.start()
    spark.stop()
    watcher.join(90)
    assert said, f"the listener never said {words!r}"
    return listener.lastError()


def test_the_run_s_last_batch_is_tried_a_fourth_time(spark_app, tmp_path):
    """The last batch's tries are at 0, 1, 2 and 4 s: a store that heals once the third has
    failed (its message says the next is in 4 s) still gets the run whole, and stop() waits for
    it, however long the stop timeout set (it is read as at most a year).
    Mutant: Flusher.run making LAST_ATTEMPTS - 1 tries (the run was lost)."""
    parent, store = _blocked_store(tmp_path)
    with spark_app(store, job="fourth-try", conf={"spark.sparkpredict.stopTimeoutMs": str(2**63 - 1)}) as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
        err = _stopped_unblocking(spark, parent, "the run's last rows are retried in 4 s")
    assert err is not None and "did not finish writing" not in err, err
    (run,) = store_mod.open(store).runs().itertuples()
    assert (run.status, run.num_tasks) == ("succeeded", 2)


def test_host_samples_over_their_cap_behind_a_failing_store_keep_the_newest(spark_app, tmp_path):
    """Batches merged behind a failing store keep their newest host samples at the cap
    (flushEveryTasks): the run's last reading, at its end, is among those written.
    Mutant: Flusher.Batch.absorb keeping the oldest."""
    parent, store = _blocked_store(tmp_path)
    conf = {"spark.sparkpredict.flushEveryTasks": "3", "spark.sparkpredict.hostSampleIntervalMs": "20"}
    with spark_app(store, job="newest-hosts", conf=conf) as spark:
        sc = spark.sparkContext
        assert sc.parallelize(range(2), 2).count() == 2
        # readings after the first job's batch (which failed), before the second job's stage
        assert _wait_for(lambda: sc._jvm.io.sparkpredict.HostMetricsPlugin.pendingSamples() >= 3, 60)
        assert sc.parallelize(range(2), 2).count() == 2
        _stopped_unblocking(spark, parent, "the run's last rows are retried in 1 s")
    st = store_mod.open(store)
    h = st.read("host_samples")
    assert len(h) == 3 and h["time_ms"].max() >= st.stages()["completion_ms"].max()


def test_a_last_batch_whose_fourth_try_failed_is_said_lost(spark_app, tmp_path):
    """A store that stays unwritable: after its fourth try the listener says the run's last rows
    are lost, not that they are tried again (no try follows).
    Mutant: Flusher.write counting the batch lost only after LAST_ATTEMPTS + 1 tries."""
    parent, store = _blocked_store(tmp_path)
    with spark_app(store, job="never-written") as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
        listener = spark.sparkContext._jvm.io.sparkpredict.SparkPredictListener
    err = listener.lastError()
    assert err is not None and "; the run's last rows are lost (4 tries)" in err, err
    assert parent.is_file()


def test_a_rename_that_answered_false_fails_the_write_which_is_retried_whole(listener_jar, tmp_path):
    """A store's rename may answer false (not done) instead of throwing: the batch is not
    committed without its tasks file, and its next try stores the run's rows once.
    Mutant: StoreWriter.renamed ignoring rename's false (the run's task rows were never stored)."""
    source = FAILED_RENAME_FS.replace('throw new IOException("a tasks file\'s rename failed");', "return false;")
    assert source != FAILED_RENAME_FS
    job = ONE_JOB.replace("laterename://", "failedrename://")
    out = _run_job(tmp_path, "failedrename", "FailedRenameFileSystem", source, job, tmp_path / "store")
    assert "rename failed: part-" in out and "done" in out, out[-3000:]
    st = store_mod.open(tmp_path / "store")
    (run,) = st.runs().itertuples()
    assert (run.status, run.num_tasks, run.num_stages) == ("succeeded", 2, 1)
    assert (len(st.tasks()), len(st.stages())) == (2, 1)


#: A writer that waits a year between writes: only the first write, and what is urgent, land
#: while the application runs.
A_YEAR_APART = {"spark.sparkpredict.flushIntervalMs": "365d", "spark.sparkpredict.flushEveryTasks": "3"}


def test_exactly_flush_every_tasks_task_rows_are_written_without_waiting_for_the_interval(spark_app, tmp_path):
    """Three task rows wait (flushEveryTasks=3): they are written at once, however long the
    interval. Mutant: Flusher.run taking only more than flushEveryTasks rows as urgent."""
    store = tmp_path / "store"
    with spark_app(store, job="three-rows",
                   conf={**A_YEAR_APART, "spark.sparkpredict.hostSampleIntervalMs": "0"}) as spark:
        for n in (3, 6):
            assert spark.sparkContext.parallelize(range(3), 3).count() == 3
            seen = _wait_for(lambda n=n: (c := _committed(store)) and len(c[1]) >= n and c, 60)
            assert seen, f"{n - 3} task rows written, then none while the application ran"
            assert set(seen[0].status) == {"running"}


def test_host_samples_at_their_cap_are_written_without_waiting_for_the_interval(spark_app, tmp_path):
    """Host samples reaching their cap (flushEveryTasks of them) are written at once, however
    long the interval. Mutant: Flusher.run not taking host samples at their cap as urgent."""
    store = tmp_path / "store"
    conf = {**A_YEAR_APART, "spark.sparkpredict.hostSampleIntervalMs": "20", "spark.sparkpredict.tasks": "false"}
    with spark_app(store, job="host-cap", conf=conf) as spark:
        sc, plugin = spark.sparkContext, spark.sparkContext._jvm.io.sparkpredict.HostMetricsPlugin
        assert sc.parallelize(range(2), 2).count() == 2
        assert _wait_for(lambda: (store / S.COMMIT_TABLE).is_dir() and _batches(store), 60)  # the first write
        assert _wait_for(lambda: plugin.pendingSamples() >= 3, 60)
        first = len(store_mod.open(store).read("host_samples"))
        assert sc.parallelize(range(2), 2).count() == 2  # its end hands the waiting samples over
        assert _wait_for(lambda: len(store_mod.open(store).read("host_samples")) >= first + 3, 60)


def test_a_long_run_id_is_cut_in_batch_ids_as_python_cuts_it_and_spares_other_runs_copies(listener_jar, tmp_path):
    """Batch ids carry 60 characters of their label, as Python's new_batch_id cuts it. A run id
    whose "ingest-" label is cut to 60 may share it with another run: that run's ingested copy
    is not the listener's to remove (the next ingest, which reads run ids, sorts it out).
    Mutants: StoreWriter.safeLabel cutting at 61; dropIngestedCopies removing at a cut label."""
    run_id = "sp-" + "a" * 70
    other = run_id[:-1] + "b"
    planted = store_mod.open(tmp_path / "listened", create=True).append(
        _runs({"run_id": other, "updated_ms": 1}), batch_id=store_io.new_batch_id("ingest-" + other))

    def long_app_id(event: dict) -> None:
        if event["Event"] == "SparkListenerApplicationStart":
            event["App ID"] = run_id

    st, _ = _replayed_edit(listener_jar, tmp_path, long_app_id)
    assert planted in st.committed_batches()
    label = store_io.new_batch_id(run_id)[14:-13]  # between the time and the random suffix
    mine = st.committed_batches() - {planted}
    assert mine and {b[14:-13] for b in mine} == {label}, mine
    assert run_id in set(st.runs()["run_id"])


#: The end of test_submit_jvm_app's app, rewritten: "helper-dies" lets a thread of its own die
#: of an exception; "throw" throws one of 600 characters out of main.
HELPER_DIES_OR_MAIN_THROWS_LONG = """if (flags.contains("helper-dies")) {
            Thread helper = new Thread(() -> { throw new IllegalStateException("a helper thread died"); }, "helper");
            helper.start();
            try { helper.join(); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
        }
        if (flags.contains("throw")) {
            throw new IllegalStateException("x".repeat(600));
        }"""


@pytest.fixture(scope="module")
def jvm_app_raising(tmp_path_factory):
    """test_submit_jvm_app's jars, its app's end rewritten (HELPER_DIES_OR_MAIN_THROWS_LONG)."""
    import test_submit_jvm_app as app

    original = app.APP
    app.APP = original.replace("""if (flags.contains("throw")) {
            throw new IllegalStateException("the driver failed after its jobs");
        }""", HELPER_DIES_OR_MAIN_THROWS_LONG)
    assert app.APP != original
    try:
        return app.jvm_app.__wrapped__(tmp_path_factory)
    finally:
        app.APP = original


def test_only_main_s_exception_fails_a_jvm_app_and_its_text_is_cut_at_500_characters(jvm_app_raising, tmp_path):
    """A thread of the application's own dying of an exception is not the application's end:
    the run succeeds. An exception out of main fails it, its text cut to 500 characters with
    "..." (as the Python side cuts it). Mutants: MainThreadRaised taking any thread's exception;
    cutting the text at 503."""
    from test_submit_jvm_app import _spark_args, _submit

    ends = {}
    for how in ("helper-dies", "throw"):
        rc, out, _ = _submit(tmp_path / how, "--", *_spark_args(jvm_app_raising, how))
        assert rc == (0 if how == "helper-dies" else 1), out[-4000:]
        (ends[how],) = store_mod.open(tmp_path / how).runs().itertuples()
    assert ends["helper-dies"].status == "succeeded", ends["helper-dies"].error_message
    why = ends["throw"].error_message
    assert ends["throw"].status == "failed" and len(why) == 500 and why.endswith("x...")
    assert why.startswith("the driver raised java.lang.IllegalStateException: xxx")
