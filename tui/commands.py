"""The interactive mode's command line: one protocol call per line.

Syntax (the protocol's verbs and argument names, nothing else)::

    OP [NAME=VALUE ...] [VALUE ...]

* ``OP`` is a protocol operation: ``add_worker``, ``submit``, ``dispatch``,
  ``complete``, ``fail``, ``cancel``, ``renew``, ``advance``.
* ``NAME=VALUE`` gives an argument by its protocol name; bare ``VALUE`` words
  fill the remaining arguments in protocol order, so
  ``dispatch worker=w1 now=5 duration=5`` and ``dispatch w1 5 5`` are the same.
* ``now`` may be left out of a timed call: it means the current time (the
  step is recorded with the number filled in).
* ``due_at=none`` and ``max_attempts=none`` mean the protocol default.

Examples: ``add_worker w1 1``, ``submit priority=2 due_at=12``,
``dispatch w1 5 5``, ``complete task_id=1 token=1 now=9``, ``advance 10``.

Parsing checks only the shape of the line (a known verb, known argument
names, every required one present). Values are passed on as typed: a value
the scheduler refuses is refused by the scheduler, with its own message.
"""

from __future__ import annotations

from fencepost.spec.formats.scenario import SIGNATURES, Step, expect_from  # noqa: F401  (expect_from re-exported: it lives with the format now)

#: Operations whose ``now`` may be left out (it defaults to the current time).
TIMED = frozenset(op for op, params in SIGNATURES.items() if any(p.name == "now" for p in params))


class CommandError(ValueError):
    """A command line that is not a call: one line saying what is wrong."""


def usage(op: str) -> str:
    """``dispatch worker now duration``: the verb and its arguments in order, optional ones in brackets."""
    words = [p.name if p.required else f"[{p.name}]" for p in SIGNATURES[op]]
    return " ".join([op, *words])


def parse_command(text: str, now: int) -> Step:
    """The ``Step`` a command line asks for; ``now`` fills a timed call's missing ``now``.

    Raises:
        CommandError: an empty line, an unknown verb, an unknown or repeated
            argument name, too many values, or a required argument missing.
    """
    words = text.split()
    if not words:
        raise CommandError("type a call, e.g. dispatch worker=w1 now=5 duration=5")
    op, rest = words[0], words[1:]
    if op not in SIGNATURES:
        raise CommandError(f"unknown operation {op!r}: use one of {', '.join(SIGNATURES)}")
    params = {p.name: p for p in SIGNATURES[op]}
    args: dict[str, object] = {}
    positional: list[str] = []
    for word in rest:
        name, sep, value = word.partition("=")
        if not sep:
            positional.append(word)
            continue
        if name not in params:
            raise CommandError(f"{op} has no argument {name!r}: {usage(op)}")
        if name in args:
            raise CommandError(f"{name} given twice: {usage(op)}")
        args[name] = _value(params[name], value)
    free = [name for name in params if name not in args]
    if op in TIMED and "now" not in args and len(positional) < len([n for n in free if params[n].required]):
        free.remove("now")  # left out: the current time
        args["now"] = now
    if len(positional) > len(free):
        raise CommandError(f"too many values for {op}: {usage(op)}")
    for name, value in zip(free, positional):
        args[name] = _value(params[name], value)
    missing = [name for name, p in params.items() if p.required and name not in args]
    if missing:
        raise CommandError(f"{op} needs {', '.join(missing)}: {usage(op)}")
    ordered = {name: args[name] for name in params if name in args}
    return Step(op, ordered)


def _value(param: object, text: str) -> object:
    """The value as the protocol's type when it reads as one; otherwise the text, for the scheduler to judge."""
    if param.type is str:
        return text
    if text.lower() == "none" and not param.required and param.default is None:
        return None
    try:
        return int(text)
    except ValueError:
        return text
