"""Batch retraining as a Spark application: refit every job with new runs into the store's registry.

    spark-submit --master yarn --conf spark.pyspark.python=/path/to/python-with-sparkpredict \\
        jobs/retrain.py --store hdfs:///sparkpredict/store [--force] [--compact | --no-compact]

The store's rows are read through Spark's Hadoop layer; the executors need sparkpredict
installed in their Python. The driver opens the store, and writes the registry, through pyarrow's
file systems (local, hdfs://, s3://, gs://): an hdfs:// store needs Hadoop's libhdfs there. When no job needs a refit (every model current, or
failing on the very runs its fit failed on), no session is started ("spark_started": false).
It prints the report ``sparkpredict retrain`` prints on stderr, then the result as one JSON line
on stdout (``sparkpredict retrain --json``'s keys), last: spark-submit merges its Python driver's
stderr into its stdout (Spark's PythonRunner), so a scheduler reads the last line of stdout, or
the file ``--json-out FILE`` writes. It exits as ``sparkpredict retrain`` does (``--help`` says
how; docs/retrain.md).
"""
from __future__ import annotations

import json
import sys


def main(argv: list[str] | None = None) -> int:
    from sparkpredict.cli import (
        _Parser,  # argparse's, ending its usage errors with a fix: line
    )
    from sparkpredict.cli.retrain import EXIT_STATUS, report_lines
    from sparkpredict.cli.store_cmd import add_no_compact, compact_lines, compaction_doc

    ap = _Parser(description="sparkpredict batch retraining (spark-submit): refit the "
                                             "models of every job with new runs into the store's registry",
                                 epilog=EXIT_STATUS)
    ap.add_argument("--store", required=True, help="history store path or URI")
    ap.add_argument("--job", action="append", metavar="JOB",
                    help="judge and refit only this job (repeat for more); the other jobs' models stay")
    ap.add_argument("--force", action="store_true", help="refit every job (each --job), changed or not")
    ap.add_argument("--no-stage-models", dest="stage_models", action="store_false",
                    help="fit only the whole-job models")
    ap.add_argument("--partitions", type=int, help="fit tasks (default 4 x default parallelism)")
    merge = ap.add_mutually_exclusive_group()
    merge.add_argument("--compact", action="store_true",
                       help="first merge the store's small batches on the driver (`sparkpredict store "
                            "compact`, its defaults), however few, so that this and every later read "
                            "opens few files")
    add_no_compact(merge, "first", dest="auto_compact")
    ap.add_argument("--json-out", metavar="FILE",
                    help="also write the result's JSON to FILE (spark-submit merges this script's "
                         "stderr into its stdout: the JSON is stdout's last line)")
    args = ap.parse_args(argv)

    from sparkpredict.errors import InputError, SparkPredictError, print_error

    json_out = None  # --json-out once it is known to take the file: an error's JSON goes there too

    def fail(exc: SparkPredictError) -> int:
        """The error as `sparkpredict retrain --json` gives it: error: and fix: lines on stderr,
        and {"error", "fix"} as stdout's last line (and in --json-out's file), so a scheduler that
        reads the JSON finds one whatever happened."""
        code = print_error(exc)
        sys.stderr.flush()
        doc = json.dumps({"error": exc.message, "fix": exc.fix})
        if json_out:
            from sparkpredict.outputs import write_text

            try:
                write_text(json_out, doc + "\n", "retrain.json")
            except SparkPredictError:
                pass  # the error itself is on stderr and stdout
        print(doc, flush=True)
        return code

    try:  # the arguments' mistakes before a session starts
        if args.partitions is not None and args.partitions < 1:
            raise InputError(f"--partitions {args.partitions} must be at least 1",
                             "give a positive number of fit tasks, or leave --partitions out")
        if args.json_out:  # a folder or an unwritable path found after the commit was an exit 2
            from sparkpredict.outputs import output_file

            output_file(args.json_out, "retrain.json")
            json_out = args.json_out
        if "://" not in args.store:
            from sparkpredict.store import io as store_io

            store_io.open(args.store)  # raises, naming the fix, when it is no store
    except SparkPredictError as exc:
        return fail(exc)

    from sparkpredict.cli.retrain import compact_first, compact_if_due
    from sparkpredict.retrain import result_if_current, retrain_spark

    try:  # either refuses a --job without runs before it rewrites the store
        compaction = (compact_first(args.store, args.job) if args.compact
                      else compact_if_due(args.store, args.job) if args.auto_compact else None)
    except SparkPredictError as exc:
        return fail(exc)
    for line in compact_lines(compaction) if compaction is not None else []:
        print(line, file=sys.stderr)
    try:
        # A nightly run on a quiet store: pyarrow finds every model current in a second, where
        # the session would start executors and ship every job to them to find the same.
        res = result_if_current(args.store, force=args.force, stage_models=args.stage_models, jobs=args.job)
        if res is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.builder.appName("sparkpredict-retrain").getOrCreate()
            try:
                res = retrain_spark(args.store, spark=spark, force=args.force, partitions=args.partitions,
                                    stage_models=args.stage_models, jobs=args.job)
            finally:
                spark.stop()
    except SparkPredictError as exc:
        return fail(exc)
    for line in report_lines(res):  # the driver's log: what `sparkpredict retrain` says
        print(line, file=sys.stderr)
    sys.stderr.flush()
    doc = json.dumps(res.to_dict() | compaction_doc(compaction))
    written = True
    if args.json_out:
        from sparkpredict.outputs import write_text

        try:  # whole or not at all (its temporary file removed): a scheduler may read it at once
            write_text(args.json_out, doc + "\n", "retrain.json")
        except SparkPredictError as exc:  # checked above: a full disk, a folder made meanwhile
            print_error(InputError(f"--json-out: {exc.message}", f"{exc.fix}; the registry was updated all "
                                   "the same, and the result is the last line on stdout"))
            written = False
    # last, after the report: under spark-submit that went to this same stream
    print(doc, flush=True)
    # non-zero, as `sparkpredict retrain`'s, so a scheduler sees an error; 1, not an argument's 2,
    # when only the result's file failed
    return res.exit_code or (0 if written else 1)


if __name__ == "__main__":
    sys.exit(main())
