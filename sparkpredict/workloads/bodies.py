"""The workloads' Spark code: ``body(spark, data_path, params) -> dict`` of result figures.

pyspark is imported inside each function (only capture and workloads touch Spark, lazily).
Every body reads the generated text files, does the HiBench-style work, and ends with an
action whose result is returned as a small summary (so a test can check the work was done).
Outputs are not written to disk: the ``noop`` sink forces full evaluation without adding disk
I/O that would only measure the local file system.
"""
from __future__ import annotations

from typing import Any


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def wordcount(spark, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """Count every word (HiBench micro/wordcount)."""
    from pyspark.sql import functions as F

    lines = spark.read.text(path)
    words = lines.select(F.explode(F.split(F.col("value"), " ")).alias("word")).where(F.col("word") != "")
    counts = words.groupBy("word").count().cache()
    n_distinct = counts.count()
    total = counts.agg(F.sum("count")).first()[0]
    counts.unpersist()
    return {"distinct_words": int(n_distinct), "words": int(total or 0)}


def sort(spark, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """Total order by the 10-byte key (TeraSort: sample, range-partition, sort)."""
    from pyspark.sql import functions as F

    recs = spark.read.text(path).select(F.substring("value", 1, 10).alias("key"), F.col("value"))
    ordered = recs.orderBy("key")
    _noop(ordered)
    first = ordered.select("key").limit(1).first()
    return {"records": int(recs.count()), "first_key": first[0] if first else None}


def kmeans(spark, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """MLlib k-means (k=5, at most ``iterations`` Lloyd steps) on 8-d Gaussian mixtures."""
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.feature import VectorAssembler

    df = spark.read.csv(path, inferSchema=False, schema=", ".join(f"x{i} double" for i in range(8)))
    vec = VectorAssembler(inputCols=[f"x{i}" for i in range(8)], outputCol="features").transform(df).cache()
    model = KMeans(k=5, maxIter=int(params.get("iterations", 5)), seed=int(params.get("seed", 0)),
                   initMode="random").fit(vec)
    cost = model.summary.trainingCost
    n = vec.count()
    vec.unpersist()
    return {"points": int(n), "training_cost": float(cost)}


def logreg(spark, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """MLlib logistic regression (L-BFGS, ``iterations`` steps) on 10 features."""
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.feature import VectorAssembler

    cols = [f"x{i}" for i in range(10)]
    schema = "label double, " + ", ".join(f"{c} double" for c in cols)
    df = spark.read.csv(path, schema=schema)
    vec = VectorAssembler(inputCols=cols, outputCol="features").transform(df).select("label", "features").cache()
    model = LogisticRegression(maxIter=int(params.get("iterations", 10)), regParam=0.01).fit(vec)
    acc = model.summary.accuracy
    vec.unpersist()
    return {"accuracy": float(acc), "iterations": int(model.summary.totalIterations)}


def pagerank(spark, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """PageRank by repeated join + aggregate over the edge list (HiBench websearch/pagerank)."""
    from pyspark.sql import functions as F

    edges = spark.read.csv(path, schema="src long, dst long").cache()
    out_deg = edges.groupBy("src").agg(F.count("*").alias("deg"))
    links = edges.join(out_deg, "src").cache()
    nodes = edges.select(F.col("src").alias("node")).union(edges.select(F.col("dst").alias("node"))) \
        .distinct().localCheckpoint(eager=True)
    ranks = nodes.withColumn("rank", F.lit(1.0))
    for _ in range(int(params.get("iterations", 3))):
        contrib = links.join(ranks, links.src == ranks.node) \
            .groupBy(F.col("dst").alias("node")).agg(F.sum(F.col("rank") / F.col("deg")).alias("c"))
        # Every node keeps a rank (0.15 without in-links), as in the textbook formulation.
        ranks = nodes.join(contrib, "node", "left") \
            .select("node", (F.lit(0.15) + F.lit(0.85) * F.coalesce(F.col("c"), F.lit(0.0))).alias("rank"))
        # Cut the lineage each step so plans stay small and each iteration is its own stages.
        ranks = ranks.localCheckpoint(eager=True)
    top = ranks.orderBy(F.desc("rank")).first()
    n = ranks.count()
    links.unpersist()
    edges.unpersist()
    return {"nodes": int(n), "top_node": int(top["node"]) if top else None}


def sqljoin(spark, path: str, params: dict[str, Any]) -> dict[str, Any]:
    """SQL join of orders with customers plus aggregation (HiBench sql/join + aggregation)."""
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # a real shuffle join
    orders = spark.read.csv(f"{path}/orders", schema="order_id long, customer_id long, amount double, day int")
    customers = spark.read.csv(f"{path}/customers", schema="customer_id long, segment string, region string")
    orders.createOrReplaceTempView("orders")
    customers.createOrReplaceTempView("customers")
    result = spark.sql("""
        SELECT c.region, c.segment, count(*) AS n, sum(o.amount) AS revenue, avg(o.amount) AS mean_amount
        FROM orders o JOIN customers c ON o.customer_id = c.customer_id
        GROUP BY c.region, c.segment
    """)
    rows = result.collect()
    return {"groups": len(rows), "orders": int(sum(r["n"] for r in rows))}
