"""``sparkpredict suggest``: how many executors for this input size (and deadline)?

Fast path: with ``--models DIR`` only numpy and the saved models load (no pandas, no JVM).
"""
from __future__ import annotations

import argparse
from typing import Any

from . import confidence_arg


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "suggest", help="advise an executor count for a job's next run",
        description="Advise how many executors a job's next run should get, from its history: "
                    "the cheapest count that meets a deadline (cost), the fastest (time), or where "
                    "more executors stop paying off (knee).")
    p.add_argument("--job", required=True, help="job key as recorded (spark.sparkpredict.job)")
    p.add_argument("--input-size", required=True, metavar="SIZE",
                   help="input size of the next run, e.g. 300GB, 1.5TiB")
    p.add_argument("--deadline", metavar="DURATION", help="e.g. 45m, 1h30m, 900 (seconds)")
    p.add_argument("--objective", default="cost", choices=("cost", "time", "knee"),
                   help="cost: cheapest meeting the deadline; time: fastest (within --budget); "
                        "knee: where more executors stop paying off (default: cost)")
    p.add_argument("--price", type=float, metavar="P", help="price of one executor-hour")
    p.add_argument("--budget", type=float, metavar="B",
                   help="for --objective time: most the run may cost (money with --price, "
                        "else executor-hours), held at --confidence by the interval's upper bound")
    p.add_argument("--min-executors", type=int, default=1, metavar="N")
    p.add_argument("--max-executors", type=int, metavar="N",
                   help="default: twice the largest count in the history (at least 8 and twice --min-executors, at most 1000)")
    p.add_argument("--executor-counts", metavar="N,N,...",
                   help="explicit candidate counts instead of the range, e.g. 2,4,8 or 2-6,8 (the "
                        "cluster sizes you can get)")
    p.add_argument("--executor-cores", type=int, metavar="N", help="default: as last recorded")
    p.add_argument("--executor-memory", metavar="SIZE",
                   help="executor memory, e.g. 4g or 4096 (MiB); default: as last recorded")
    p.add_argument("--confidence", type=confidence_arg, default=0.9, help="interval coverage: 0.9 or 90%% (default 0.9)")
    add_param_option(p)
    p.add_argument("--store", metavar="S", help="history store (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store); with "
                   "--models, it supplies only the runs behind the warnings (memory, few runs)")
    p.add_argument("--models", metavar="DIR", help="models written by `sparkpredict fit`")
    p.add_argument("--json", action="store_true", help="print the advice as JSON")
    p.set_defaults(func=run)


def add_param_option(p: Any, text: str = "a job parameter of the run beyond its size (e.g. "
                     "iterations=25), as its recorded runs declared it; repeat for several") -> None:
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help=text)


def parse_params(pairs: list[str] | None) -> dict[str, str]:
    """``["iterations=25", "k=3"]`` -> ``{"iterations": "25", "k": "3"}`` (numbers checked later).

    A name given twice is refused: keeping either value would silently drop the other."""
    import re

    from ..errors import InputError
    from ..features.runs import PARAM_NAME_PATTERN

    out: dict[str, str] = {}
    for pair in pairs or []:
        name, eq, value = str(pair).partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not value or not re.match(PARAM_NAME_PATTERN, name):
            raise InputError(f"cannot read --param {pair!r}",
                             "write NAME=VALUE with a word for NAME, e.g. --param iterations=25")
        if name in out:
            raise InputError(f"--param {name} is given twice ({name}={out[name]} and {name}={value})",
                             f"give each job parameter once, e.g. --param {name}={value}")
        out[name] = value
    return out


def executor_memory_mb(text: str | None) -> int | None:
    """``4g`` -> 4096, ``512m`` -> 512, ``4096`` -> 4096 (Spark's units: binary, bare = MiB); at
    least the memory Spark starts an executor with. The advice's own check, which reads
    ``--executor-memory`` and a Python caller's ``executor_memory_mb="4g"`` alike."""
    from ..advice_args import check_executor_memory_mb, cli_flags

    if text is None:
        return None
    with cli_flags():
        return check_executor_memory_mb(str(text))


def run(args: argparse.Namespace) -> int:
    from ..advice_args import cli_flags
    from ..advise import suggest_executors

    with cli_flags():  # the checks are the API's; their errors name this command's flags
        advice = suggest_executors(
            args.job, args.input_size, deadline_s=args.deadline, objective=args.objective,
            executor_cores=args.executor_cores, executor_memory_mb=args.executor_memory,
            min_executors=args.min_executors, max_executors=args.max_executors,
            executor_counts=args.executor_counts,
            price_per_executor_hour=args.price, budget=args.budget, confidence=args.confidence,
            params=parse_params(args.param), store=args.store, models=args.models)
    from ..units import unitless_duration_warning, unitless_size_warning

    bare = [w for w in (unitless_size_warning(args.input_size, "--input-size"),
                        unitless_duration_warning(args.deadline, "--deadline")) if w]
    if args.json:
        import json

        d = advice.to_dict()
        d["warnings"] = bare + d["warnings"]
        print(json.dumps(d, indent=2))
    else:
        print(format_advice(advice))
        for w in bare:
            print(f"warning: {w}")
    return 0


def format_advice(a: Any, max_rows: int = 40) -> str:
    """The advice as a readable table, the chosen row marked with ``>``."""
    from ..advice import candidate_table, context_lines
    from ..units import format_bytes, format_duration, format_number, plural

    unused = "" if getattr(a, "input_size_used", True) else " (not used: no run recorded an input size)"
    head = [f"job {a.job}, input {format_bytes(a.input_bytes)}{unused}, objective {a.objective}"
            + (f", deadline {format_duration(a.deadline_s)}" if a.deadline_s is not None else "")]
    runs = "? runs" if a.n_runs is None else plural(a.n_runs, "run")
    head.append(f"model {a.model_name} ({a.model_error}, {runs})"
                + (f", {a.model_source}" if getattr(a, "model_source", None) else ""))
    cols, rows = candidate_table(a, max_rows)
    widths = [max(len(r[k]) for r in [cols] + rows) for k in range(len(cols))]
    fmt = lambda r: "  ".join(v.rjust(w) for v, w in zip(r, widths)).rstrip()
    if a.params:
        head.append("job parameters: " + ", ".join(f"{k}={format_number(v)}" for k, v in a.params.items()))
    lines = head + ["", fmt(cols)] + [fmt(r) for r in rows]
    if len(rows) < len(a.candidates):  # thinned: a reader must not take the rows for all there are
        lines.append(f"({len(a.candidates) - len(rows)} of {len(a.candidates)} executor counts left "
                     "out of this table; --json lists every one)")
    lines += ["", "advice: " + a.summary(), *context_lines(a)]
    lines += [f"warning: {w}" for w in a.warnings]
    return "\n".join(lines)
