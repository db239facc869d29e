"""The runner's trace: every protocol call it made, in the order the scheduler saw them.

``save_trace(path)`` writes it as a scenario, each call's actual result as
``expect``: ``fencepost replay`` checks it against any scheduler (it must start
fresh) and ``fencepost tui`` shows it. A runner records it only when asked for
(``Runner(trace=True)``), and then in full: it grows with every call. Calls
whose outcome is unknown are not in it: a scenario has no step whose effect is
unknown.
"""

from __future__ import annotations

from pathlib import Path

from fencepost.spec.formats.scenario import ALL_SIGNATURES, Scenario, Step, StepResult, dump_scenario, expect_from

#: A saved trace's description when the caller gives none (Markdown).
DESCRIPTION = ("Every protocol call a `Runner` made on its scheduler, in the order the scheduler "
               "saw them, each with its actual result as `expect`.")

#: Each operation's argument names in protocol order: how a recorded call's values are named again.
ARGUMENT_NAMES = {op: tuple(p.name for p in params) for op, params in ALL_SIGNATURES.items()}


class Trace:
    """The calls, as ``(op, argument values in protocol order, value, error message)`` tuples.

    Tuples, not dicts, so a long trace stays small. Iterating and ``len`` read
    the calls so far; the runner appends under its lock (``record``).
    """

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, object, str | None]] = []

    def __iter__(self):
        return iter(self.calls)

    def __len__(self) -> int:
        return len(self.calls)

    def record(self, op: str, values: tuple, value: object, error: str | None) -> None:
        """One call: its argument values (trailing optional ones may be left out), its value or refusal."""
        self.calls.append((op, values, value, error))

    def snapshot(self) -> list[tuple[str, tuple, object, str | None]]:
        """The calls so far, copied (take it under the runner's lock; build the scenario outside)."""
        return list(self.calls)

    @staticmethod
    def save(calls: list[tuple[str, tuple, object, str | None]], path: Path, title: str, description: str | None,
             meta: dict) -> Path:
        """Write ``calls`` (a ``snapshot``) to ``path`` as a scenario, each with its actual result as
        ``expect`` (JSON for ``.json``, else TOML); return ``path``. O(calls)."""
        steps = []
        for op, values, value, error in calls:
            args = dict(zip(ARGUMENT_NAMES[op], values))
            steps.append(Step(op, args, expect=expect_from(Step(op, args), StepResult(value, error))))
        description = description or DESCRIPTION
        dump_scenario(Scenario(title=title, steps=tuple(steps), description=description, meta=meta), path)
        return path

    def check_invariants(self) -> None:
        """Assert every call names a protocol operation, with no more values than it has arguments,
        and a refused call carries its message and no value."""
        for op, values, value, error in self.calls:
            assert op in ARGUMENT_NAMES, f"the trace holds {op!r}, not a protocol operation"
            assert isinstance(values, tuple) and len(values) <= len(ARGUMENT_NAMES[op]), (op, values)
            assert error is None or (isinstance(error, str) and value is None), (op, value, error)
