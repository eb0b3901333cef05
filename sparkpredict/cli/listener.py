"""``sparkpredict listener build [--force]``: compile the JVM listener and print the jar's path."""
from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("listener", help="build the JVM listener jar",
                              description="Manage the JVM listener that records Spark runs.")
    sub = p.add_subparsers(dest="listener_command", metavar="ACTION")
    b = sub.add_parser("build", help="compile the listener against the installed pyspark; print the jar path")
    b.add_argument("--force", action="store_true", help="rebuild even when a cached jar exists")
    b.set_defaults(func=_build)
    c = sub.add_parser("conf", help="print the Spark settings that attach the listener (spark-defaults format)")
    c.add_argument("--store", help="history store path or URI (default: $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    c.add_argument("--job", help="job key (default: the application name)")
    c.set_defaults(func=_conf)

    from . import refuse_without_action

    refuse_without_action(p, "listener", "add one: sparkpredict listener build (compile the jar) or sparkpredict "
                                         "listener conf (print the settings that attach it)")


def _build(args: argparse.Namespace) -> int:
    from ..capture.listener import build_listener

    print(build_listener(force=args.force))
    return 0


def _conf(args: argparse.Namespace) -> int:
    from ..capture.listener import check_store, listener_conf
    from ..config import resolve_store

    # settings that record nothing would be found out only in a driver's log, after a run
    check_store(resolve_store(args.store))
    for k, v in listener_conf(store=args.store, job=args.job).items():
        print(f"{k}  {v}")
    return 0
