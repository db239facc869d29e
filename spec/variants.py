"""Declared contract variants: the documented choices where real queues legitimately differ.

fencepost's contract has a *core* that no queue may break and a few
*choices* a queue makes differently on purpose (SQS hands out messages in no
order, its receipt handles are opaque strings, it accepts a late delete while
nobody else holds the message). A variant names one such choice and the rule
that replaces the contract's; a scheduler declares the variants it follows,
and every checker then checks the core always and each choice as declared,
the way Elle checks a history against the consistency model a database
claims rather than one it never promised.

The core, which no variant switches off (``spec.model`` enforces it whatever
the variants, so a scheduler that breaks it is rejected whatever it declares):

* a task has at most one live lease;
* a lease's token was never issued before;
* while a lease is live, only its token can complete, fail or renew it;
* a final task never runs again;
* a cancelled pending task never starts;
* nothing is dispatched before its due time.

``Variants`` is plain data: one field per variant, each a string from the
variant's values, the first of which is the contract. ``DEFAULT`` is the
contract itself. Files record only the fields that differ (``declared()``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace

#: Each variant's values, the contract's first, and the sentence saying what
#: the others change. The order of this table is the order variants are
#: printed in.
VALUES: dict[str, tuple[str, ...]] = {
    # Which eligible task a dispatch hands out (priority-id: priority, then id; the due time breaks no tie).
    "order": ("priority", "fifo", "any", "priority-id"),
    # Whether a lease is still live at exactly its expires_at.
    "interval": ("half-open", "closed"),
    # What a lease token is: 1, 2, 3... in dispatch order, or any value the scheduler chooses.
    "tokens": ("int", "opaque"),
    # Whether a report with the last expired lease's token counts while nobody holds the task.
    "late": ("refuse", "accept-unclaimed"),
    # When a task whose attempt budget is spent by an expired lease ends failed.
    "exhaust": ("at-expiry", "at-dispatch"),
    # Whether a worker's capacity bounds its simultaneous leases.
    "capacity": ("per-worker", "none"),
    # Whether task(id) answers a view of the task.
    "views": ("full", "none"),
    # Whether a complete on a succeeded task, with a token that task had, is refused or accepted (changing nothing).
    "repeat": ("refuse", "accept"),
    # Whether a task is eligible once due_at <= now, or only once due_at < now.
    "due": ("at", "after"),
    # Whether a lease lasts the duration its call asks for, or one length N for every lease (any positive int).
    "duration": ("any",),
    # Whether a renew with the token of the lease that expired last revives it while nobody took the task since
    # (a Redis Streams XCLAIM of an entry still in its consumer's pending list resets its idle time).
    "revive": ("refuse", "unclaimed"),
    # Whether a renew extends its own lease, or every live lease its worker holds (a heartbeat per worker
    # process: procrastinate's update_heartbeat keeps all of a worker's jobs alive).
    "heartbeat": ("lease", "worker"),
}

#: Variants whose other values are not listed in ``VALUES`` but follow a rule:
#: ``duration`` is ``any`` or a positive whole number written in decimal.
FREE_VALUES = {"duration": "any or a whole number >= 1"}

#: The operations and submit arguments a queue may leave out (``without=...``).
#: ``priority`` is left out by ``order=fifo`` too.
OPTIONAL_PARTS = ("cancel", "due_at", "fail", "keys", "max_attempts", "priority", "renew")


@dataclass(frozen=True, slots=True)
class Variants:
    """The contract's choices in force for one run. Immutable; compare with ``==``.

    Fields are strings, each one of ``VALUES[name]`` (``without``: a sorted
    tuple of ``OPTIONAL_PARTS``). Build one with ``parse`` or
    ``from_declared``, which validate; the constructor does not.
    """

    order: str = "priority"
    interval: str = "half-open"
    tokens: str = "int"
    late: str = "refuse"
    exhaust: str = "at-expiry"
    capacity: str = "per-worker"
    views: str = "full"
    repeat: str = "refuse"
    due: str = "at"
    duration: str = "any"
    revive: str = "refuse"
    heartbeat: str = "lease"
    without: tuple[str, ...] = ()

    # ---------------------------------------------------------------- reading

    @classmethod
    def parse(cls, assignments: Iterable[str], argument: str = "--variant") -> Variants:
        """Variants from ``NAME=VALUE`` strings, as the command line gives them.

        ``without`` takes a comma-separated list (``without=renew,cancel``).
        A name given twice must give the same value.

        Raises:
            ValueError: naming ``argument``, the string and the rule it breaks.
        """
        declared: dict[str, object] = {}
        for text in assignments:
            if not isinstance(text, str) or "=" not in text:
                raise ValueError(f"{argument} must be NAME=VALUE (for example order=any), not {text!r}")
            name, _, value = text.partition("=")
            name, value = name.strip(), value.strip()
            parsed: object = tuple(p.strip() for p in value.split(",") if p.strip()) if name == "without" else value
            if name in declared and declared[name] != parsed:
                raise ValueError(f"{argument} {name} is given twice with different values: {declared[name]!r} and {value!r}")
            declared[name] = parsed
        return cls.from_declared(declared, argument)

    @classmethod
    def from_declared(cls, declared: Mapping[str, object] | None, argument: str = "variants") -> Variants:
        """Variants from a mapping as files and programs record them (``{"order": "any"}``).

        Absent names keep the contract's value. ``without`` may be a list or a
        comma-separated string.

        Raises:
            ValueError: ``declared`` is not a mapping, or names an unknown
                variant or value; the message names ``argument``.
        """
        if declared is None:
            return DEFAULT
        if not isinstance(declared, Mapping):
            raise ValueError(f"{argument} must be a table of NAME = VALUE, not {type(declared).__name__}: {declared!r}")
        changes: dict[str, object] = {}
        for name, value in declared.items():
            if name == "without":
                changes[name] = _parts(value, argument)
                continue
            if name not in VALUES:
                known = ", ".join([*VALUES, "without"])
                raise ValueError(f"{argument}: unknown variant {name!r} (known: {known})")
            if name in FREE_VALUES:
                changes[name] = _free_value(name, value, argument)
                continue
            if not isinstance(value, str) or value not in VALUES[name]:
                raise ValueError(f"{argument}: {name} must be one of {', '.join(VALUES[name])}, not {value!r}")
            changes[name] = value
        variants = replace(DEFAULT, **changes)
        refuse_unsound(variants, argument)
        return variants

    # ---------------------------------------------------------------- writing

    def declared(self) -> dict[str, object]:
        """The fields that differ from the contract, as files record them (``without`` as a list)."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != getattr(DEFAULT, f.name):
                out[f.name] = list(value) if f.name == "without" else value
        return out

    def assignments(self) -> list[str]:
        """``NAME=VALUE`` strings that ``parse`` turns back into these variants."""
        return [f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in self.declared().items()]

    def describe(self) -> str:
        """One short line for headers and summaries: ``order=any, tokens=opaque`` or ``the contract``."""
        return ", ".join(self.assignments()) or "the contract"

    # ---------------------------------------------------------------- questions the checkers ask

    def lease_length(self) -> int | None:
        """The one lease length under ``duration=N``, or None when each call chooses its own."""
        return None if self.duration == "any" else int(self.duration)

    def offers(self, part: str) -> bool:
        """Whether the queue offers ``part`` (an operation or submit argument in ``OPTIONAL_PARTS``)."""
        if part == "priority" and self.order == "fifo":
            return False
        return part not in self.without


def _free_value(name: str, value: object, argument: str) -> str:
    """``duration``'s value as files keep it: ``"any"`` or a positive int in decimal (an int is accepted too)."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(text, str) and (text == "any" or (text.isdigit() and text.isascii() and int(text) >= 1)):
        return text if text == "any" else str(int(text))
    raise ValueError(f"{argument}: {name} must be {FREE_VALUES[name]}, not {value!r}")


def _parts(value: object, argument: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [p.strip() for p in value.split(",") if p.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(p, str) for p in value):
        raise ValueError(f"{argument}: without must be a list of {', '.join(OPTIONAL_PARTS)}, not {value!r}")
    unknown = [p for p in value if p not in OPTIONAL_PARTS]
    if unknown:
        raise ValueError(f"{argument}: without may name only {', '.join(OPTIONAL_PARTS)}, not {unknown[0]!r}")
    return tuple(sorted(set(value)))


#: How many characters of an opaque str token a report shows: enough to tell
#: random handles apart (8 random letters are), short enough to read (an SQS
#: receipt handle has 185).
TOKEN_SHOWN = 8


def show_token(token: object) -> str:
    """A token as reports print it: an int (or anything not a str) as ``str`` does, a str quoted
    and cut to ``TOKEN_SHOWN`` characters plus an ellipsis, the same way everywhere."""
    if isinstance(token, str):
        return repr(token) if len(token) <= TOKEN_SHOWN else repr(token[:TOKEN_SHOWN] + "…")
    return str(token)


def show_span(started_at: object, expires_at: object, interval: str = "half-open") -> str:
    """A lease's span as every listing prints it: ``[0, 5)``, or ``[0, 5]`` under ``interval=closed``
    (live at exactly its end). ``started_at`` None (a start nobody recorded) prints as ``...``."""
    start = "..." if started_at is None else started_at
    return f"[{start}, {expires_at}{']' if interval == 'closed' else ')'}"


def heartbeat_of(state: object, worker: str, end: int) -> object:
    """What ``heartbeat=worker`` adds to an accepted renew (``spec.model.renew``; any other value: ``state``).

    The renew is its worker's heartbeat: every live lease ``worker`` holds in
    the model's ``state`` now ends at ``end`` too, but one whose cancellation
    was requested (a cancelled task is never kept alive by its worker). Only
    live leases, whose tokens are current, change: the core is untouched.
    O(leases held × log T): it reads the table's running tasks and puts back
    the ones it changes (``spec.table.TaskTable``), never the whole table.
    """
    if state.variants.heartbeat != "worker":
        return state
    tasks = state.tasks
    for t in tasks.running():
        if t.worker == worker and not t.cancel_requested and t.expires_at != end:
            tasks = tasks.put(replace(t, expires_at=end))
    return replace(state, tasks=tasks)


#: The contract itself: every variant at its first value.
DEFAULT = Variants()


def merge_declarations(given: Mapping[str, object] | None, declared: Mapping[str, object] | None, *,
                       given_by: str = "--variant", declared_by: str = "the scheduler") -> Variants:
    """The variants in force when a run is given some and a scheduler, program or file declares some.

    ``given`` and ``declared`` are what each side said, as ``explicit``
    returns it (a name said with the contract's own value counts as said);
    either may be None or empty (said nothing). The result has every field
    either side set.

    Raises:
        ValueError: both set a field to different values; one line naming
            the field, both values and who said each.
    """
    mine = explicit(given or {}, given_by)
    theirs = explicit(declared or {}, declared_by)
    for name in mine.keys() & theirs.keys():
        if mine[name] != theirs[name]:
            def show(v: object) -> str:
                return ",".join(v) if isinstance(v, tuple) else str(v)
            raise ValueError(
                f"{given_by} says {name}={show(mine[name])} but {declared_by} declares {name}={show(theirs[name])}: "
                "declare the same variants in both, or in one only"
            )
    variants = replace(DEFAULT, **{**theirs, **mine})
    refuse_unsound(variants, f"{given_by} and {declared_by}")
    return variants


def overlay(given: Iterable[str], declared: Mapping[str, object] | None, declared_by: str = "the scheduler"
            ) -> tuple[dict[str, object], list[tuple[str, object, object]]]:
    """The command line over a scheduler's own declaration: ``--variant`` wins, name by name.

    The rule (docs/contract.md, "Declared variants"): a name ``--variant``
    gives replaces the scheduler's value for that name (``without=`` replaces
    the whole list); a name only one side gives is taken from that side. So
    one factory serves to look past a finding (``--variant late=refuse``).
    Scenario files and history headers are not overlaid: what they record was
    judged under their variants, and ``combine`` refuses a disagreement.

    Returns:
        The merged declaration (each name with its value, ``without`` a tuple),
        and the overridden names as ``(name, declared value, given value)``.

    Raises:
        ValueError: a flag or the declaration is invalid (as ``explicit``).
    """
    given = list(given)
    mine = explicit(given, "--variant")
    theirs = explicit(declared or {}, declared_by)
    given_order = dict.fromkeys(text.partition("=")[0].strip() for text in given)  # as the flags came
    changed = [(name, theirs[name], mine[name]) for name in given_order if name in theirs and theirs[name] != mine[name]]
    return {**theirs, **mine}, changed


def describe_overrides(changed: list[tuple[str, object, object]], declared_by: str) -> str:
    """One line saying what ``--variant`` overrode: ``--variant overrides X's fencepost_variants: late=refuse (declared accept-unclaimed)``."""
    parts = [f"{name}={_show(given)} (declared {_show(old)})" for name, old, given in changed]
    return f"--variant overrides {declared_by}: " + ", ".join(parts)


def combine(sides: Iterable[tuple[Mapping[str, object] | Iterable[str], str]]) -> Variants:
    """The variants in force given several declarations, each ``(what it says, who says it)``.

    Each side is a mapping as files record it or ``NAME=VALUE`` strings; a
    name said with the contract's own value counts as said. Every field any
    side sets is set; two sides that set one field to different values are
    an error, as is a combination ``refuse_unsound`` refuses.

    Raises:
        ValueError: one line naming the field, both values and both sides.
    """
    merged: dict[str, object] = {}
    whose: dict[str, str] = {}
    for said, who in sides:
        for name, value in explicit(said, who).items():
            if name in merged and merged[name] != value:
                raise ValueError(
                    f"{whose[name]} says {name}={_show(merged[name])} but {who} declares {name}={_show(value)}: "
                    "declare the same variants in both, or in one only"
                )
            merged[name], whose[name] = value, who
    variants = replace(DEFAULT, **merged)
    refuse_unsound(variants, " and ".join(dict.fromkeys(whose.values())) or "variants")
    return variants


def _show(value: object) -> str:
    return ",".join(value) if isinstance(value, tuple) else str(value)


#: Pairs of variants the checkers cannot check exactly together, each with why.
UNSOUND = (
    (("exhaust", "at-dispatch"), ("order", "any"),
     "which spent tasks a dispatch ends depends on an order that order=any leaves open, "
     "so one result does not fix the next state"),
)


def refuse_unsound(variants: Variants, argument: str = "variants") -> None:
    """Refuse a combination the checkers cannot check exactly (see ``UNSOUND``).

    Raises:
        ValueError: one line naming both variants and why.
    """
    for (name, value), (other, other_value), why in UNSOUND:
        if getattr(variants, name) == value and getattr(variants, other) == other_value:
            raise ValueError(f"{argument}: {name}={value} cannot be checked together with {other}={other_value}: {why}")


def explicit(declared: Mapping[str, object] | Iterable[str], argument: str = "variants") -> dict[str, object]:
    """The fields a declaration names, validated, each with its value (``without`` as a sorted tuple).

    ``declared`` is a mapping as files record it, or ``NAME=VALUE`` strings
    as the command line gives them. Unlike ``Variants.declared()``, a name
    given with the contract's own value is kept: it was said.

    Raises:
        ValueError: as ``Variants.from_declared`` and ``Variants.parse``.
    """
    if not isinstance(declared, Mapping):
        texts = list(declared)
        variants = Variants.parse(texts, argument)
        names = {t.partition("=")[0].strip() for t in texts}
        return {name: getattr(variants, name) for name in names}
    variants = Variants.from_declared(declared, argument)
    return {name: getattr(variants, name) for name in declared}
