"""Fixes from a review of the Python API a driver program touches, each fed its case (no JVM)."""
from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import pytest

import sparkpredict
from sparkpredict.errors import InputError, UnknownJobError

HISTORY = Path(__file__).parent / "data" / "history"


def test_attach_refuses_the_builder_class_as_it_refuses_the_session_class(tmp_path):
    from pyspark.sql import SparkSession

    # the class has a config function too: it ran with the key as its self, an AttributeError
    with pytest.raises(InputError, match="attach\\(\\) takes a SparkSession builder"):
        sparkpredict.attach(SparkSession.Builder, job="x", store=str(tmp_path / "s"))


def test_a_timedelta_deadline_reads_as_its_seconds():
    a = sparkpredict.suggest_executors("sort", "16MB", deadline_s=datetime.timedelta(minutes=45), store=str(HISTORY))
    b = sparkpredict.suggest_executors("sort", "16MB", deadline_s="45m", store=str(HISTORY))
    assert a.deadline_s == 2700.0 and a == b


def test_advice_is_unhashable_by_its_own_name():
    a = sparkpredict.suggest_executors("sort", "16MB", store=str(HISTORY))
    with pytest.raises(TypeError, match="unhashable type: 'Advice'"):
        hash(a)


def test_a_count_past_any_cluster_in_executor_counts_reads_as_a_sentence():
    with pytest.raises(InputError) as e:
        sparkpredict.suggest_executors("sort", "16MB", executor_counts=[10**7], store=str(HISTORY))
    assert e.value.message.startswith("executor_counts: executor count 10,000,000 is more executors")


def test_the_package_exports_listener_conf_and_advise_keeps_its_names():
    from sparkpredict import advise
    from sparkpredict.capture.listener import listener_conf

    assert sparkpredict.listener_conf is listener_conf and "listener_conf" in sparkpredict.__all__
    # a second __all__ at the end of advise.py had dropped the names docs/advice.md cites
    assert {"WIDE_INTERVAL", "UNRELIABLE_CV_MAPE", "SAME_SPEED", "format_chance"} <= set(advise.__all__)


def test_a_job_name_with_spaces_around_it_is_refused_and_a_recorded_one_is_quoted(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="begins or ends with spaces") as e:
        sparkpredict.listener_conf(store=str(tmp_path / "s"), job="  padded  ")
    assert e.value.fix == "give it without them: 'padded'"
    # a run recorded under such a name (a --conf of its own): the error shows the spaces
    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    from sparkpredict.store import edit

    runs = sparkpredict.store.open(path).runs()
    ids = list(runs[runs.job == "sort"].run_id)
    with monkeypatch.context() as m:
        m.setattr(edit, "check_job_name", lambda job, fix, known=(): None)  # as the listener writes it, unchecked
        edit.edit_runs(path, ids, job="  padded  ")
    with pytest.raises(UnknownJobError) as e:
        sparkpredict.suggest_executors("padded", "16MB", store=str(path))
    assert "'  padded  '" in e.value.fix
