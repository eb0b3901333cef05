"""``sparkpredict listener build [--force]``: compile the JVM listener and print the jar's path."""
from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("listener", help="build the JVM listener jar",
                              description="Manage the JVM listener that records Spark runs.")
    sub = p.add_subparsers(dest="listener_command", metavar="ACTION")
    b = sub.add_parser("build", help="compile the listener against the installed pyspark; print the jar path")
    b.add_argument("--force", action="store_true", help="rebuild even when a cached jar exists")
    b.set_defaults(func=_build)
    c = sub.add_parser("conf", help="print the Spark settings that attach the listener (spark-defaults format)")
    c.add_argument("--store", help="history store path or URI (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    c.add_argument("--job", help="job key (default: the application name)")
    c.add_argument("--jar", metavar="URI",
                   help="where every driver reads the listener jar, e.g. hdfs:///apps/sparkpredict/"
                        "sparkpredict-listener.jar (copy `sparkpredict listener build`'s jar there); "
                        "default: the jar built on this machine")
    c.add_argument("--merge", metavar="FILE",
                   help="a spark-defaults.conf whose spark.jars, spark.extraListeners and spark.plugins "
                        "the printed lines keep, ours added: appended to FILE they add to its lists "
                        "instead of replacing them (a later line wins)")
    c.add_argument("--template", action="store_true",
                   help="print the commented cluster template instead (conf/spark-defaults.conf.sparkpredict, "
                        "installed with the package): the steps, and the lines with placeholders")
    c.set_defaults(func=_conf)

    from . import refuse_without_action

    refuse_without_action(p, "listener", "add one: sparkpredict listener build (compile the jar) or sparkpredict "
                                         "listener conf (print the settings that attach it)")


def _build(args: argparse.Namespace) -> int:
    from ..capture.listener import build_listener

    print(build_listener(force=args.force))
    return 0


def _conf(args: argparse.Namespace) -> int:
    import os

    from ..capture.listener import MERGED_KEYS, check_store, listener_conf, merged_list
    from ..capture.properties import property_line, read_properties
    from ..config import KEY_STORE, resolve_store
    from ..errors import InputError

    if args.template:
        from ..capture.listener import conf_template

        if any(v is not None for v in (args.store, args.job, args.jar, args.merge)):
            raise InputError("--template prints the template as it is: --store, --job, --jar and "
                             "--merge fill in the lines printed without it",
                             "drop --template to print the lines filled in, or the other options")
        print(conf_template(), end="")
        return 0
    theirs: dict[str, str] = {}
    if args.merge is not None:
        if not os.path.isfile(args.merge) or not os.access(args.merge, os.R_OK):
            raise InputError(f"--merge {args.merge!r} is not a readable file",
                             "give the spark-defaults.conf the lines will be appended to, e.g. "
                             "--merge $SPARK_HOME/conf/spark-defaults.conf")
        theirs = read_properties(args.merge)
    # settings that record nothing would be found out only in a driver's log, after a run
    check_store(resolve_store(args.store))
    conf = listener_conf(store=args.store, job=args.job, jar=args.jar)
    for k in MERGED_KEYS:
        conf[k] = merged_list(theirs.get(k), conf[k])
    from ..config import store_for_display, uri_has_credentials

    if uri_has_credentials(conf[KEY_STORE]):
        print(f"warning: the store URI {store_for_display(conf[KEY_STORE])} holds credentials, and these "
              "lines would write them into spark-defaults.conf and every application's settings: give "
              "them in the cluster's Hadoop settings (fs.s3a.access.key ...) or the environment instead",
              file=sys.stderr)
    for k, v in conf.items():
        print(property_line(k, v))
    return 0
