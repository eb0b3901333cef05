"""A small word count for capture tests: `spark-submit wordcount_job.py [--fail] [--sleep S]
[--failed-job-first]`.

--fail raises in the driver after the Spark jobs succeeded (the listener sees no failed job;
``sparkpredict submit`` must still mark the run failed). --sleep waits after the first job,
so a test can kill the driver then. --failed-job-first runs a job that fails first, which the
driver catches (later jobs recover from it).
"""
import sys
import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("wordcount-job").getOrCreate()
sc = spark.sparkContext
if "--failed-job-first" in sys.argv:
    def boom(x):
        raise ValueError("boom in the first job")

    try:
        sc.parallelize(range(2), 1).map(boom).collect()
    except Exception:  # noqa: BLE001  (the driver goes on, as a retrying job would)
        print("first job failed, as asked", flush=True)
words = sc.parallelize(["a b c", "a b", "c d e f"] * 200, 4).flatMap(str.split)
print("counts", sorted(words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b).collect())[:2], flush=True)
if "--sleep" in sys.argv:
    print("first job done", flush=True)
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
    words.count()
if "--fail" in sys.argv:
    raise SystemExit("driver failed on purpose")
spark.stop()
