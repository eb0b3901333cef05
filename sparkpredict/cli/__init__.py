"""The ``sparkpredict`` command: parse, call the typed API, format, exit.

Each subcommand lives in its own module ``sparkpredict/cli/<name>.py`` defining
``register(subparsers)``; that function adds a parser whose ``func`` default takes the parsed
arguments and returns an exit code. Modules import heavy libraries inside ``func`` only, so
``sparkpredict --help`` and quick commands start fast.

Errors that users can cause (:class:`sparkpredict.errors.SparkPredictError`) print one line
and exit 2; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ..errors import InputError

# Order is the order shown in --help. A module missing here is a bug, not a silent skip.
COMMANDS = [
    "listener", "submit", "ingest", "store_cmd", "runs", "fit", "predict", "evaluate",
    "suggest", "sweep", "report", "demo", "retrain", "simulate", "explain",
]


@contextlib.contextmanager
def printed_here(logger: str, verbose: bool) -> Iterator[None]:
    """Hold back a library logger's warnings that the command prints itself, once (kept with -v)."""
    log = logging.getLogger(logger)
    level = log.level
    if not verbose:
        log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _print_json_error(message: str, fix: str | None) -> None:
    """A user mistake as JSON on stdout, for a script that asked for --json: it parses stdout
    whatever happened, while a person still reads the error: and fix: lines on stderr."""
    import json

    print(json.dumps({"error": message, "fix": fix}, indent=2))


class _Parser(argparse.ArgumentParser):
    """argparse's parser; with ``--json`` on the command line, a usage error (a missing or bad
    argument) is also ``{"error", "fix"}`` on stdout, as every other user mistake is."""

    #: set by :func:`main` while it parses a command line that asks for JSON
    json_errors = False
    #: the (sub)command's parser :func:`main` parses with: argparse reports an unrecognized
    #: argument from the top parser, whose usage would not show the command's options
    command: argparse.ArgumentParser | None = None

    def error(self, message: str) -> NoReturn:
        parser: argparse.ArgumentParser = self
        if self.prog == "sparkpredict" and _Parser.command is not None:
            parser = _Parser.command
        fix = _usage_fix(parser, message)
        if _Parser.json_errors:
            _print_json_error(message, fix)
        # argparse's usage and error lines, then the fix line every other user mistake ends with
        parser.print_usage(sys.stderr)
        self.exit(2, f"{parser.prog}: error: {message}\nfix: {fix}\n")


def _usage_fix(parser: argparse.ArgumentParser, message: str) -> str:
    """The fix for argparse's ``message``: the missing options to give, or the option or
    command meant by a misspelt one, then where the rest is explained."""
    import difflib
    import re

    see = f"see `{parser.prog} --help`"
    missing = re.match(r"the following arguments are required: (.+)", message)
    if missing:
        named = []
        for name in missing.group(1).split(", "):
            action = next((a for a in parser._actions if name in a.option_strings), None)
            meta = None
            if action is not None and action.nargs != 0:
                meta = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
            named.append(f"{name} {meta}" if meta else name)
        return f"give {', '.join(named)}; {see}"
    unknown = re.match(r"unrecognized arguments: (\S+)", message)
    choice = re.match(r"argument \S+: invalid choice: '([^']*)' \(choose from (.+)\)", message)
    if unknown and _unit_word(unknown.group(1)):
        # `--input-size 2 GB`, `--deadline 1h 30m`: the shell split the value at its space
        return (f"a size or duration is one word: write it without the space (2GB, 1h30m), or quote it "
                f"('2 GB', '1h 30m'); {see}")
    if unknown and parser.prog.endswith(" submit"):
        from ..capture.submit_args import spark_submit_option

        word = unknown.group(1).split("=")[0]
        if spark_submit_option(word):
            # `submit --executors 2 --master yarn job.py`: spark-submit's option before the --
            # that starts spark-submit's arguments; "did you mean --executors?" for
            # --num-executors sent the user to an option they had already given
            return (f"{word} is spark-submit's option: give it after --, with the script, as in "
                    f"`sparkpredict submit [options] -- {word} ... job.py`; {see}")
    if unknown and unknown.group(1).startswith("--"):
        word, known = unknown.group(1).split("=")[0], [o for a in parser._actions for o in a.option_strings]
    elif choice:
        # quoted choices up to Python 3.12, bare ones after
        word, known = choice.group(1), [c.strip("'\" ") for c in choice.group(2).split(",")]
    else:
        return see
    # compared without their dashes, which every option shares: with them "--json" was "close"
    # to "--store"
    bare = {k.lstrip("-"): k for k in known}
    close = difflib.get_close_matches(word.lstrip("-"), list(bare), n=1, cutoff=0.7)
    return f"did you mean {bare[close[0]]}? {see}" if close else see


def _unit_word(word: str) -> bool:
    """A word that is the unit of a size or duration (``GB``, ``min``), or the rest of a
    chained duration (``30m``), as left over when a value was typed with a space in it."""
    import re

    from ..units import _BYTE_UNITS, _DUR_PART, _DUR_S

    w = word.strip().lower()
    return bool(w) and (w in _BYTE_UNITS or w in _DUR_S or _DUR_PART.fullmatch(w) is not None
                        or re.fullmatch(r"[0-9]*\.?[0-9]+\s*(?:[kmgtp]i?b?)", w) is not None)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(
        prog="sparkpredict",
        description="How many executors should this Spark job get, and how long will it take?")
    parser.add_argument("--version", action="version", version=f"sparkpredict {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"sparkpredict.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"sparkpredict.cli.{name}":
                continue  # command not built yet
            raise
        mod.register(sub)
    return parser


def _command_of(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser | None:
    """The parser of the (sub)command a command line names: ``store clean``'s of
    ``store clean --json``; None when it names none."""
    found = None
    for w in words:
        if w == "--":
            break
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if w.startswith("-") or not subs or w not in subs[0].choices:
            continue
        parser = found = subs[0].choices[w]
    return found


def confidence_arg(text: str) -> float:
    """``--confidence``: ``0.9``, or ``90%`` as the advice writes levels; its range is the
    command's to check (:func:`sparkpredict.models.columns.check_confidence`), whose error
    names the flag."""
    from ..models.columns import meant_level, read_level

    try:
        level = read_level(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a level: {text!r} (write e.g. 0.9 or 90%)") from None
    meant = meant_level(text)
    if meant and text.strip().endswith("%"):
        raise argparse.ArgumentTypeError(f"{text!r} is a {level:.2%} interval (write {meant} or "
                                         f"{float(meant) * 100:g}% for a {float(meant) * 100:g}% one)")
    return level


def _dash_values(parsers: list[argparse.ArgumentParser], words: list[str]) -> list[str]:
    """``words`` with a value that starts with a dash joined to its option, as ``--opt=value``:
    argparse takes ``--input-size -5GB`` for two options and says only "expected one argument",
    where the size's own check says what is wrong with it (a negative size) and how to fix it."""
    takes_value = {o for p in parsers for a in p._actions if a.option_strings and a.nargs is None
                   and not isinstance(a, (argparse._StoreConstAction, argparse._CountAction,
                                          argparse._HelpAction, argparse._VersionAction))
                   for o in a.option_strings}
    known = {o for p in parsers for a in p._actions for o in a.option_strings}
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":  # the rest is the Spark application's (submit, sweep)
            out.extend(words[i:])
            break
        nxt = words[i + 1] if i + 1 < len(words) else None
        if (w in takes_value and nxt is not None and len(nxt) > 1 and nxt.startswith("-")
                and nxt != "--" and nxt.split("=", 1)[0] not in known):
            out.append(f"{w}={nxt}")
            i += 2
            continue
        out.append(w)
        i += 1
    return out


def refuse_without_action(p: argparse.ArgumentParser, group: str, fix: str) -> None:
    """A command group given no action (``sparkpredict store``) prints its usage and one
    ``error:``/``fix:`` pair, exit 2, rather than its help as if that were an answer."""
    def no_action(args: argparse.Namespace) -> int:
        from ..errors import InputError

        p.print_usage(sys.stderr)
        raise InputError(f"no {group} action given", fix)

    p.set_defaults(func=no_action)


def main(argv: list[str] | None = None) -> int:
    from ..errors import InputError, SparkPredictError, print_error

    parser = build_parser()
    words = sys.argv[1:] if argv is None else argv
    # not after "--": there the words are the Spark application's (submit, sweep)
    _Parser.json_errors = "--json" in (words[:words.index("--")] if "--" in words else words)
    _Parser.command = _command_of(parser, words)
    words = _dash_values([parser] + ([_Parser.command] if _Parser.command is not None else []), list(words))
    try:
        args = parser.parse_args(words)
    finally:
        _Parser.json_errors = False
        _Parser.command = None
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_usage(sys.stderr)
        exc = InputError("no command given", "give one, e.g. sparkpredict demo; sparkpredict --help lists them all")
        if getattr(args, "json", False):
            _print_json_error(exc.message, exc.fix)
        return print_error(exc)
    try:
        try:
            return int(args.func(args) or 0)
        except BrokenPipeError:
            raise
        except OSError as exc:
            # The file system refused a path the user gave (unreadable, too long, a full disk):
            # pyarrow and open() raise these from many places, each a path to fix, not a bug.
            # Others (an error without a path) stay tracebacks, except on a remote store.
            if not (exc.filename or exc.errno in _OS_FIXES):
                remote = _remote_store_of(args)
                if remote is None:
                    raise
                # a remote store that stopped answering mid-command (its first answer is
                # checked where it is opened): the network or credentials, not a bug
                from ..store.io import unreachable
                raise unreachable(remote, exc) from exc
            logging.getLogger(__name__).info("the file system refused a path", exc_info=True)
            raise os_error(exc) from exc
        except UnicodeEncodeError as exc:
            # a byte typed that is not UTF-8 (a lone surrogate); a terminal that cannot show
            # valid text is another matter
            if _surrogates(exc):
                raise not_text(exc) from exc
            if exc.encoding.replace("-", "").lower() != "utf8":  # stdout of an ASCII locale
                raise InputError(f"this output's encoding ({exc.encoding}) cannot show "
                                 f"{exc.object[exc.start:exc.end]!r}",
                                 "set PYTHONIOENCODING=utf-8, or use a UTF-8 locale (e.g. LANG=C.UTF-8)") from exc
            raise
    except SparkPredictError as exc:
        if getattr(args, "json", False):
            _print_json_error(exc.message, exc.fix)
        return print_error(exc)
    except KeyboardInterrupt as exc:
        # a signal that stopped a command (submit's SIGTERM): its shell exit status, 128 + signal
        signum = getattr(exc, "signum", None)
        print("interrupted" if signum is None else f"terminated (signal {signum})", file=sys.stderr)
        return 130 if signum is None else 128 + signum
    except BrokenPipeError:
        # The reader went away (`sparkpredict runs | head`): stop quietly, as Unix tools do.
        # Point stdout at /dev/null so that the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _remote_store_of(args: argparse.Namespace) -> str | None:
    """The command's store when it is a remote one (given, or the default's $SPARKPREDICT_STORE)."""
    from ..config import resolve_store
    from ..errors import StoreError
    from ..store.io import is_remote

    if not hasattr(args, "store"):
        return None
    try:
        path = resolve_store(args.store)
    except StoreError:  # a store argument that is no path: not what failed here
        return None
    return path if is_remote(path) else None


#: errno -> what to do about a path the file system refused
_OS_FIXES = {
    errno.EACCES: "check that path's permissions: this user must be able to read it (and to write "
                  "where the command writes)",
    errno.EPERM: "check that path's permissions and owner",
    errno.ENAMETOOLONG: "give a shorter path (the file system limits a name to 255 bytes)",
    errno.ENOSPC: "free disk space there, or write somewhere else",
    errno.EDQUOT: "free space within your quota there, or write somewhere else",
    errno.EROFS: "that file system is read-only: write somewhere else",
    errno.ENOENT: "check that the path exists",
    errno.ENOTDIR: "a part of that path is a file, not a folder: check the path",
    errno.EISDIR: "that path is a folder: give a file path",
}


def os_error(exc: OSError) -> InputError:
    """An :class:`OSError` as the one ``error:``/``fix:`` pair of a user's mistake."""
    from ..errors import InputError

    what = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc) or type(exc).__name__
    return InputError(what, _OS_FIXES.get(exc.errno or 0, "check that path and the file system it is on"))


def _surrogates(exc: UnicodeEncodeError) -> str:
    """The lone surrogates (``\\udc80``-``\\udcff``: bytes of an argument that were not UTF-8)
    among the characters ``exc`` could not encode."""
    bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
    return "".join(ch for ch in bad if "\udc80" <= ch <= "\udcff")


def not_text(exc: UnicodeEncodeError) -> InputError:
    """A value typed with a byte that is not UTF-8 (Python keeps it as a lone surrogate, which
    no file name or Parquet string can hold)."""
    from ..errors import InputError

    bad = _surrogates(exc)
    raw = bad.encode("utf-8", "surrogateescape") if bad else b""
    return InputError(f"a value given holds bytes that are not UTF-8 text ({raw!r})",
                      "give paths and names as UTF-8 text (a UTF-8 locale: e.g. LANG=C.UTF-8)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
