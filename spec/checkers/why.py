"""Why a counterexample is one: the rule broken, the values that break it, where the contract says so.

``why(trace, variants)`` reads the diverging step of a lockstep trace (the
one ``spec.checkers.lockstep`` marked), replays the model up to it, and asks
the model why it answers that call as it does (``reasons.explain``). Of those
reasons it picks the one the implementation's answer contradicts:

* a different result: of a dispatch, the reason for what differs (the
  token: how tokens are issued; a lease where the model has none: why that
  task may not run, or the expiry that ended it; no lease where the model
  has one: the expiry that made the task eligible, or what freed the
  worker's slot); of a report, why it is accepted or refused; a call the
  model refuses: its ``ValueError``; in a batch, the first entry that differs;
* a different view afterwards: the reason this call changes that task (an
  expiry, an accepted complete or fail, a cancel), or that nothing changes it;
* anything else (an invariant, a hang, a crash): the problem itself, with
  the rule it breaks where one is known.

The same ``Why`` is printed by ``fencepost check``, ``explore`` and
``replay``, so its words are the model's everywhere. ``Why.rule`` names the
rule, so ``spec.checkers.canonical`` can tell two counterexamples of the same
violation from two different ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fencepost.spec import model
from fencepost.spec.reasons import Because, CONTRACT, explain
from fencepost.spec.checkers.deadline import DEFAULT_CALL_TIMEOUT
from fencepost.spec.checkers.lockstep import run_calls
from fencepost.spec.checkers.results import comparable
from fencepost.spec.formats.trace import TraceStep
from fencepost.spec.protocol import RESTART, Lease
from fencepost.spec.variants import DEFAULT, Variants

#: The prefix of the line that ends every counterexample (pinned by issue 30).
WHY_PREFIX = "why: "

#: ``Lockstep.compare_views``'s words for a view that differs afterwards: the task and the fields.
_VIEW_DIFFERS = re.compile(r"^task (\d+) differs afterwards: (.*)$")
_INVARIANT = re.compile(r"^invariant (\w+) violated: (.*)$")

#: The rule each invariant of ``spec.invariants`` states, and where docs/contract.md says so.
_INVARIANT_RULES = {
    "each_task_has_exactly_one_status": ("a task's status is one of the six statuses", "TaskView"),
    "running_task_has_exactly_one_current_lease": ("a task has worker, token and expires_at exactly while running", "TaskView"),
    "no_worker_above_capacity": ("a worker holds at most its capacity of live leases", "dispatch"),
    "tokens_are_unique_and_increasing": ("every lease carries a token never issued before", "dispatch"),
    "no_lease_alive_at_or_past_expiry": ("a lease is live on [started_at, expires_at)", "rule 3"),
    "final_states_never_change": ("succeeded, failed and cancelled are final", "rule 4"),
    "attempts_never_exceed_max_attempts": ("a task is dispatched at most max_attempts times", "fail"),
    "cancelled_task_never_runs_after_cancellation": ("a cancelled task never starts", "rule 4"),
}


@dataclass(frozen=True)
class Why:
    """The reason a counterexample breaks the contract: ``rule`` (a stable name), ``text`` (with the values), ``section``."""

    rule: str
    text: str
    section: str | None = None  # where docs/contract.md states the rule (or another page, "docs/..."); None: nowhere

    def line(self) -> str:
        """The ``why:`` line a counterexample ends with."""
        if not self.section:
            where = ""
        elif self.section.startswith("docs/"):  # a rule another page states (the call deadline: docs/checking.md)
            where = f" ({self.section})"
        else:
            where = f" ({CONTRACT}: {self.section})"
        return f"{WHY_PREFIX}{self.text}{where}"


def why(trace: list[TraceStep], variants: Variants = DEFAULT) -> Why | None:
    """The reason the diverging step of ``trace`` breaks the contract; None when no step is marked."""
    marked = [number for number, step in enumerate(trace) if step.problem]
    if not marked:
        return None
    index = marked[-1]
    step = trace[index]
    states = _model_states(trace[:index + 1], variants)
    before = states[index]
    got = step.got
    if isinstance(got, tuple) and got[:1] in (("hang",), ("fault",)):
        if got[0] == "hang":
            return Why("no-answer", f"every call must answer within --call-timeout ({got[1]:g} s), and this {step.op} did not",
                       "docs/checking.md")
        return Why("protocol-fault", f"a program behind --exec speaks the adapter protocol: {step.problem}", "docs/adapter-protocol.md")
    if step.op == RESTART:
        return Why("restart-keeps-state", f"a restart loses or changes nothing acknowledged: {step.problem}", "optional capabilities: keys and restart")
    reasons = explain(before, step.op, dict(step.args))
    chooses = variants.order == "any" or variants.tokens == "opaque"
    if chooses and step.op in ("dispatch", "dispatch_many") and comparable(step.expected) != comparable(got) \
            and not (isinstance(got, tuple) and got[:1] == ("error",)):
        try:  # the variants allow several answers: say which rule the scheduler's breaks
            allowed = model.why_not(before, step.op, dict(step.args), _leases_of(got))
        except ValueError:
            allowed = ""
        if allowed:
            return Why("not-allowed", f"under the declared variants the model allows no such answer: {allowed}", "declared variants")
    if comparable(step.expected) != comparable(got):
        return _result_why(trace, states, index, reasons) or _fallback(step)
    if reasons and reasons[0].rule == "invalid-argument" and not step.problem.startswith("invariant "):
        return _as_why(reasons[0])  # refused alike, but the implementation changed something: an invalid call changes nothing
    found = _VIEW_DIFFERS.match(step.problem)
    if found:
        return _view_why(step, int(found.group(1)), found.group(2), reasons)
    if step.problem.startswith("now differs afterwards"):
        return Why("clock", f"time is the last timed call's now and never goes back: {step.problem}", "rule 1")
    return _read_why(step, states[index + 1]) or _fallback(step)


def _model_states(trace: list[TraceStep], variants: Variants) -> list[model.State]:
    """The model's state before each step of ``trace`` (and after the last): refused calls change nothing.

    Where the variants let a dispatch answer otherwise than the model's own
    pick (``order=any``, ``tokens=opaque``), the model follows the lease the
    step records as expected, as the lockstep did (``model.follow``).
    """
    state = model.initial(variants)
    states = [state]
    chooses = variants.order == "any" or variants.tokens == "opaque"
    for step in trace:
        if step.op != RESTART:
            try:
                followed = None
                if chooses and step.op in ("dispatch", "dispatch_many"):
                    followed = model.follow(state, step.op, dict(step.args), _leases_of(step.expected))
                state = followed[0] if followed is not None else model.apply(state, step.op, dict(step.args))[0]
            except ValueError:
                pass
        states.append(state)
    return states


def _leases_of(value: object) -> object:
    """A normalized dispatch result as the protocol's values: a ``Lease``, None, or a batch's list of them."""
    if isinstance(value, tuple) and value[:1] == ("batch",):
        return [_leases_of(item) for item in value[1]]
    if isinstance(value, tuple) and value[:1] == ("lease",):
        return Lease(task_id=value[1], worker=value[2], token=value[3], started_at=value[4], expires_at=value[5])
    return None


#: ``compare_views``' words for the reads ``task()`` must refuse or answer (``spec.checkers.steps``, ``lockstep``).
_NEVER_ISSUED = re.compile(r"^task\((.+?)\) returned .*, but an id never issued, or not an int, must raise ValueError$")
_FORGOTTEN = re.compile(r"^task (\d+) was forgotten by prune, but task\(\d+\) still answers|^task\((\d+)\) of a forgotten task")
_KNOWN_RAISED = re.compile(r"^task\((\d+)\) raised: (.*)$")


def _read_why(step: TraceStep, after: model.State) -> Why | None:
    """The rule a read of ``task()`` after the step breaks, with the model's count of tasks; None if none of these."""
    problem = step.problem or ""
    issued = len(after.tasks)
    found = _NEVER_ISSUED.match(problem)
    if found:
        known = f"ids 1..{issued} are issued" if issued else "no task is submitted"
        return Why("unknown-id", f"an unknown task_id is an error, not a task: {known}, so task({found.group(1)}) must raise ValueError",
                   "rule 2")
    found = _FORGOTTEN.match(problem)
    if found:
        task_id = found.group(1) or found.group(2)
        return Why("forgotten-refused", f"prune forgot task {task_id}, so task({task_id}) must raise ValueError saying it was "
                   "forgotten, and its id is never reused", "prune")
    found = _KNOWN_RAISED.match(problem)
    if found and 1 <= int(found.group(1)) <= issued:
        return Why("known-id", f"task {found.group(1)} exists ({after.tasks[int(found.group(1)) - 1].status.value}), so task({found.group(1)}) "
                   f"answers its view and must not raise", "task")
    return None


def _fallback(step: TraceStep) -> Why:
    found = _INVARIANT.match(step.problem or "")
    if found and found.group(1) in _INVARIANT_RULES:
        rule, section = _INVARIANT_RULES[found.group(1)]
        return Why(found.group(1), f"{rule}: {found.group(2)}", section)
    if (step.problem or "").startswith("the implementation crashed") or "not a ValueError" in (step.problem or ""):
        return Why("value-error-only", f"a call raises ValueError or nothing: {step.problem}", "rule 2")
    return Why("other", f"the implementation parts from the model here: {step.problem or 'it diverged'}", None)


def _entry(step: TraceStep) -> int:
    """The batch entry (from 1) whose result differs first; 0 for a single call."""
    expected, got = step.expected, step.got
    if not (isinstance(expected, tuple) and expected[:1] == ("batch",)):
        return 0
    mine = got[1] if isinstance(got, tuple) and got[:1] == ("batch",) else ()
    for number, want in enumerate(expected[1], 1):
        if number > len(mine) or comparable(mine[number - 1]) != comparable(want):
            return number
    return len(expected[1]) + 1  # the implementation answered more entries than the model


def _pick(reasons: list[Because], *rules: str, task_id: int | None = None) -> Because | None:
    """The first reason with one of ``rules`` (about ``task_id`` when given)."""
    for because in reasons:
        if because.rule in rules and (task_id is None or because.task_id == task_id):
            return because
    return None


_EXPIRIES = ("expiry-pending", "expiry-cancelled", "expiry-budget-spent")
_NOT_ELIGIBLE = ("cancelled-never-starts", "final-never-runs", "one-live-lease", "not-due")


def _as_why(because: Because | None, prefix: str = "") -> Why | None:
    return None if because is None else Why(because.rule, prefix + because.text, because.section)


def _result_why(trace: list[TraceStep], states: list[model.State], index: int, reasons: list[Because]) -> Why | None:
    step = trace[index]
    entry = _entry(step)
    expected, got = step.expected, step.got
    if entry:
        # the entry's own results; an expiry a batch's first entry makes counts for the whole batch
        reasons = [b for b in reasons if b.entry == entry or (b.entry == 1 and b.rule in _EXPIRIES)]
        expected = expected[1][entry - 1] if entry <= len(expected[1]) else None
        mine = got[1] if isinstance(got, tuple) and got[:1] == ("batch",) else ()
        got = mine[entry - 1] if entry <= len(mine) else None
    if isinstance(expected, tuple) and expected[:1] == ("error",):
        return _as_why(_pick(reasons, "invalid-argument"))
    raised = isinstance(got, tuple) and got[:1] == ("error",)
    if raised:
        main = next((b for b in reasons if "result" in b.decides), None)
        return _as_why(main, "the call is valid, so it must not raise: ")
    if step.op in ("dispatch", "dispatch_many"):
        return _dispatch_why(trace, states, index, reasons, expected, got)
    if isinstance(expected, tuple) and expected[:1] == ("outcome",):
        if expected[1]:  # accepted, the implementation refused
            return _as_why(_pick(reasons, "current-lease", "cancel-running", "cancel-waiting", "repeat-accept", "revive-unclaimed"))
        refusal = next((b for b in reasons if b.section in ("rejection reasons",) or b.rule in ("already-final", "cancel-requested")), None)
        return _as_why(refusal)
    return _as_why(next((b for b in reasons if "result" in b.decides), None))


def _dispatch_why(trace: list[TraceStep], states: list[model.State], index: int, reasons: list[Because],
                  expected: object, got: object) -> Why | None:
    is_lease = lambda value: isinstance(value, tuple) and value[:1] == ("lease",)  # noqa: E731
    if is_lease(expected) and is_lease(got):
        if expected[1] == got[1] and expected[2] == got[2] and expected[4:] == got[4:]:
            return _as_why(_pick(reasons, "fresh-token"))
        if expected[1] != got[1]:
            return _as_why(_pick(reasons, "dispatch-order") or _pick(reasons, "worker-room"))
        return _as_why(_pick(reasons, "lease-span"))
    if is_lease(got):  # a lease where the model hands out nothing
        task_id = got[1]
        return _as_why(_pick(reasons, *_EXPIRIES, task_id=task_id) or _pick(reasons, *_NOT_ELIGIBLE, task_id=task_id)
                       or _pick(reasons, "worker-full") or _pick(reasons, "nothing-eligible"))
    if is_lease(expected):  # no lease where the model hands one out
        task_id, worker = expected[1], expected[2]
        expired = _pick(reasons, *_EXPIRIES, task_id=task_id)
        if expired is not None:
            return _as_why(expired)
        room = _pick(reasons, "worker-room", task_id=task_id)
        freed = _slot_freed(trace, states, index, worker)
        if room is not None and freed is not None:
            number, because = freed
            return Why(f"{room.rule}<-{because.rule}", f"{room.text}: at step {number + 1} {because.text}", because.section)
        return _as_why(room)
    return None


def _slot_freed(trace: list[TraceStep], states: list[model.State], index: int,
                worker: str) -> tuple[int, Because] | None:
    """The last step before ``index`` whose reasons free a slot of ``worker`` (a lease of it ending), if any."""
    for number in range(index - 1, -1, -1):
        step = trace[number]
        if step.op == RESTART:
            continue
        for because in reversed(explain(states[number], step.op, dict(step.args))):
            if because.worker == worker and "room" in because.decides and because.rule != "add-worker":
                return number, because
    return None


def _view_why(step: TraceStep, task_id: int, fields: str, reasons: list[Because]) -> Why:
    about = [b for b in reasons if b.task_id == task_id and "view" in b.decides]
    if about:
        because = about[-1]  # the last word on the task: what the call leaves it as
        return Why(because.rule, because.text, because.section)
    return Why("unchanged", f"nothing in {step.op} changes task {task_id}, so its view stays as it was ({fields})",
               "rule 3" if step.op in ("advance", "dispatch", "complete", "fail", "cancel", "renew", "prune") else step.op)


def why_line(trace: list[TraceStep], problem: str | None = None, variants: Variants = DEFAULT) -> str:
    """The ``why:`` line for ``trace``; with no marked step (a failure outside any step), ``problem`` itself."""
    found = why(trace, variants)
    if found is None:
        return Why("other", problem or "the implementation diverged").line()
    return found.line()


def why_at(factory: Callable[[], object], calls: list[tuple[str, dict]], number: int, variants: Variants = DEFAULT,
           call_timeout: float | None = DEFAULT_CALL_TIMEOUT) -> Why | None:
    """The ``Why`` of step ``number`` (from 1) of ``calls`` on a fresh scheduler from ``factory``, when the
    lockstep parts from the model exactly there; else None.

    For viewers of a scenario (the TUI at its diverging step, the report): the
    calls up to it are replayed once, in lockstep, so the words are those
    ``fencepost check`` prints for the same calls. Each call has the
    ``call_timeout`` deadline.
    """
    if number < 1:
        return None
    trace = run_calls(factory, calls[:number], call_timeout, variants)
    if trace is None or len(trace) != number or not trace[-1].problem:
        return None
    return why(trace, variants)
