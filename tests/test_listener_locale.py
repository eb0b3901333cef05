"""A listener set up by hand (spark.extraListeners and spark.jars in spark-defaults.conf or on
spark-submit's command line, not attach() or `sparkpredict submit`, which refuse this before
Spark starts) under a locale whose charset cannot name its local store.

Under LC_ALL=C the JVM names files in ASCII (sun.jnu.encoding; no -D option changes it): Hadoop's
local file system recorded a store file:///.../ünï into a folder ".../?n?", and every Python
reader said there was no store; spark-submit's launcher turns a --conf value's "ünï" into
"??n??" before the listener sees it. The listener records nothing then, logs one error naming
the fix, and the application runs as it would without it. A real spark-submit each (a JVM and
a Python driver: about 10 s).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sparkpredict import store as store_mod

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sys.platform == "darwin", reason="the JDK names files in UTF-8 on macOS")]

LISTENER = "io.sparkpredict.SparkPredictListener"
APP = textwrap.dedent("""
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("by-hand").getOrCreate()
    print("COUNT", spark.sparkContext.parallelize(range(100), 2).map(lambda x: x % 7).distinct().count())
    spark.stop()
""")


def _spark_submit(tmp_path, env_of_spark_defaults, locale: str, defaults: dict[str, str], conf: dict[str, str]):
    """spark-submit of APP under ``locale`` with ``defaults`` in its spark-defaults.conf and
    ``conf`` as --conf options; the listener comes from those settings alone."""
    from sparkpredict.capture.submit_args import spark_submit_path

    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    lines = [f"{k} {v}" for k, v in {"spark.ui.enabled": "false", **defaults}.items()]
    (conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = {**env_of_spark_defaults, "LC_ALL": locale, "SPARK_CONF_DIR": str(conf_dir),
           "PYSPARK_PYTHON": sys.executable}
    args = [str(spark_submit_path()), "--master", "local[2]"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return subprocess.run([*args, str(app)], env=env, capture_output=True, timeout=300, check=False)


def _listener_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "ERROR SparkPredictListener" in ln]


@pytest.mark.parametrize("given", ["spark-defaults", "command-line"])
def test_a_store_the_c_locale_cannot_name_is_refused_by_the_listener_and_the_app_runs(
        listener_jar, tmp_path, env_of_spark_defaults, given):
    """spark-defaults.conf (read as UTF-8: the listener has the name right, and the JVM cannot
    write it) with a file: URI, or --conf (the launcher made it "??n??") with a plain path."""
    if not str(listener_jar).isascii():
        pytest.skip("spark-submit under LC_ALL=C cannot open a jar of a non-ASCII path")
    stores = tmp_path / "stores"
    stores.mkdir()
    meant = stores / "ünï"
    settings = {"spark.jars": str(listener_jar), "spark.extraListeners": LISTENER,
                "spark.plugins": "io.sparkpredict.HostMetricsPlugin"}
    if given == "spark-defaults":
        defaults, conf = {**settings, "spark.sparkpredict.store": f"file://{meant}"}, {}
    else:
        defaults, conf = {}, {**settings, "spark.sparkpredict.store": str(meant)}
    r = _spark_submit(tmp_path, env_of_spark_defaults, "C", defaults, conf)
    out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0 and "COUNT 7" in out, err[-3000:]
    assert os.listdir(stores) == []  # no ".../?n?" beside the store meant
    errors = _listener_errors(err)
    assert len(errors) == 1, errors or err[-3000:]
    line = errors[0]
    assert "cannot record into store" in line and "nothing is recorded for this application" in line
    assert "Fix: run Spark under a UTF-8 locale (export LC_ALL=C.UTF-8)" in line and "ASCII" in line
    assert ("cannot write the folder's name" if given == "spark-defaults" else "'?' in the folder's name") in line
    assert "Exception" not in line and "Traceback" not in err


def test_the_same_settings_under_a_utf8_locale_record_the_run(listener_jar, tmp_path, env_of_spark_defaults):
    if not str(listener_jar).isascii():
        pytest.skip("the jar's path must be ASCII for the other half of this check")
    meant = tmp_path / "stores" / "ünï"
    defaults = {"spark.jars": str(listener_jar), "spark.extraListeners": LISTENER,
                "spark.sparkpredict.store": f"file://{meant}", "spark.sparkpredict.job": "by-hand"}
    r = _spark_submit(tmp_path, env_of_spark_defaults, "C.UTF-8", defaults, {})
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0 and b"COUNT 7" in r.stdout, err[-3000:]
    assert _listener_errors(err) == []
    assert os.listdir(tmp_path / "stores") == ["ünï"]
    runs = store_mod.open(meant).runs()
    assert list(runs["job"]) == ["by-hand"] and list(runs["status"]) == ["succeeded"]
    assert runs.iloc[0]["num_stages"] == len(store_mod.open(meant).stages()) == 2
