"""What a failover lost: the acknowledged calls a promoted standby does not hold.

With asynchronous replication a primary acknowledges a commit before any
standby has it, so promoting a standby that was behind loses the primary's
last commits: always a suffix of the order they committed in, never half a
call. ``lost_in_failover(events, scheduler)`` says exactly which, for one
client's recorded history (the fault clients' event dicts, ``inject.pair``'s
input): the model state after each prefix of the acknowledged calls is a
candidate, and ``spec.checkers.crash.recovered_as`` -- the views, then a probe
of what views cannot show (workers, the last token, keys) -- picks the one the
promoted scheduler is in. The calls after that prefix that changed the state
are what was lost; calls that changed nothing (a refused completion, a
dispatch that found nothing) cannot be told lost from kept, and are not named.

Limits, kept small and honest: one client, so the order calls committed in is
the order they were made in (several clients' commit order is not in a
history); no ``info`` call (an unknown outcome would double the candidates:
the caller ends its calls before the failover); and the probe changes the
scheduler it reads (it adds workers and tasks), so give it one made for the
purpose. A promoted state that is no prefix at all (a hole in the middle, a
call half applied) is reported as such: worse than a lost suffix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.spec import model
from fencepost.spec.checkers.crash import recovered_as
from fencepost.spec.formats.trace import format_call
from fencepost.impl.faults.inject import pair


@dataclass
class Loss:
    """What the promoted scheduler holds of one client's acknowledged calls."""

    acknowledged: int  # acknowledged calls in the history (ok results and ValueErrors)
    kept: int | None  # how many of them, from the first, it holds (None: it holds no prefix)
    lost: list[dict] = field(default_factory=list)  # the calls after those that changed the state, in order
    problem: str | None = None  # why no prefix matches, when none does

    def lines(self) -> list[str]:
        """The report: one line of totals, then one line per lost call."""
        if self.kept is None:
            return [f"the promoted scheduler holds no prefix of the {self.acknowledged} acknowledged calls: {self.problem}"]
        head = (f"{self.acknowledged} acknowledged calls; the promoted scheduler holds the first {self.kept}; "
                f"{len(self.lost)} {'call' if len(self.lost) == 1 else 'calls'} that changed the state lost")
        return [head] + [f"lost: {format_call(c['op'], c['args'])} -> {c['result']!r}" for c in self.lost]


def lost_in_failover(events: list[dict], scheduler: object) -> Loss:
    """Which of one client's acknowledged calls ``scheduler`` (the promoted one) lost; see the module docstring.

    Raises:
        ValueError: the history holds more than one client, or an ``info`` call.
    """
    calls = pair(events)
    processes = sorted({c["process"] for c in calls})
    if len(processes) > 1:
        raise ValueError(f"events must be one client's history (their commit order is its call order): {processes}")
    unknown = [c for c in calls if c["kind"] == "info"]
    if unknown:
        raise ValueError(f"events must hold no call of unknown outcome: {format_call(unknown[0]['op'], unknown[0]['args'])}")
    state = model.initial()
    states, made = [state], [-1]  # the distinct states in order, and the index of the call that made each
    for index, call in enumerate(calls):
        try:
            after = model.apply(state, call["op"], dict(call["args"]))[0]
        except ValueError:
            after = state  # refused: changes nothing, as the server's refusal did
        if after != state:
            states.append(after)
            made.append(index)
        state = after
    found, why = recovered_as(scheduler, states[::-1])  # the longest prefix first
    if found is None:
        return Loss(len(calls), None, problem=why)
    held = len(states) - 1 - found
    kept = made[held + 1] if held + 1 < len(states) else len(calls)
    return Loss(len(calls), kept, [calls[made[i]] for i in range(held + 1, len(states))])
