"""``fencepost bench --tricks``: what each speed trick in ``impl/indexed.py`` buys.

A *trick* is code in ``IndexedScheduler`` that is there for speed or memory
alone: taking it out changes no answer, only the cost. Each one is named in
``TRICKS`` with the source rewrite that takes it out. ``without(trick)``
applies the rewrite to ``impl/indexed.py``'s own source and loads the result
as a module of its own, so the scheduler measured "without" is the shipped
one minus exactly that trick. A rewrite that no longer matches the source is
a ``TrickGone`` error: a trick changed or went, and this table (and
docs/design.md, which quotes it) must say so.

``measure`` times the shipped scheduler and every variant with ``fencepost
bench``'s own loop (``impl.bench_timing.cycle_loop``: one submit + dispatch +
complete with N tasks pending), all in turns (``impl.bench_timing.timed``),
and counts the bytes per pending task as ``fencepost bench`` does. A trick
pays when taking it out costs a few per cent or more of a cycle, or of the
memory, at 10^4 to 10^5 tasks; ``tests/implementations/test_bench_tricks.py``
checks that every variant still gives the shipped scheduler's answers.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import fencepost.impl.indexed as indexed
from fencepost.bench.timing import Timing, bytes_per_task, cycle_loop, timed

#: Sizes (pending tasks) measured unless ``--sizes`` says otherwise.
SIZES = (10_000, 100_000)


class TrickGone(Exception):
    """A trick's rewrite does not match ``impl/indexed.py``: the trick changed or was removed."""


@dataclass(frozen=True)
class Trick:
    """A speed trick: its name, what it does, and the exact (old, new) source rewrites that take it out."""

    name: str
    what: str
    rewrites: tuple[tuple[str, str], ...]


TRICKS: tuple[Trick, ...] = (
    Trick("lease-builder", "a Lease set through its slots, not the frozen dataclass's __init__", (
        ("        lease = _new_object(Lease)  # the Lease builder, written out (see _set_task_id)\n"
         "        _set_task_id(lease, task_id)\n"
         "        _set_worker(lease, worker)\n"
         "        _set_token(lease, token)\n"
         "        _set_started_at(lease, now)\n"
         "        _set_expires_at(lease, expires_at)\n"
         "        return lease\n",
         "        return Lease(task_id, worker, token, now, expires_at)\n"),
    )),
    Trick("fresh-records", "an untouched task stored as its ready-heap tuple, not a _Task", (
        ("        if max_attempts is None and retry_delay == 1:\n"
         "            fresh = (-priority, due_at, task_id)\n"
         "        else:\n"
         "            fresh = (-priority, due_at, task_id, max_attempts, retry_delay)\n"
         "        heappush(self._ready, fresh)\n"
         "        self._tasks.append(fresh)\n",
         "        entry = (-priority, due_at, task_id)\n"
         "        heappush(self._ready, entry)\n"
         "        self._tasks.append(_Task(priority, due_at, max_attempts, retry_delay, entry))\n"),
    )),
    Trick("short-fresh", "a fresh task with the default max_attempts and retry_delay is a 3-tuple, not 5", (
        ("        if max_attempts is None and retry_delay == 1:\n"
         "            fresh = (-priority, due_at, task_id)\n"
         "        else:\n"
         "            fresh = (-priority, due_at, task_id, max_attempts, retry_delay)\n",
         "        fresh = (-priority, due_at, task_id, max_attempts, retry_delay)\n"),
    )),
    Trick("running-record", "dispatch builds a fresh task's _Task slot by slot, not through __init__", (
        ("                t = _new_object(_Task)\n"
         "                t.priority = -entry[0]\n"
         "                t.due_at = entry[1]\n"
         "                if len(entry) == 3:\n"
         "                    t.max_attempts = None\n"
         "                    t.retry_delay = 1\n"
         "                else:\n"
         "                    t.max_attempts = entry[3]\n"
         "                    t.retry_delay = entry[4]\n"
         "                t.attempts = 0\n"
         "                t.cancel_requested = False\n"
         "                t.ended_at = None\n",
         "                t = _promoted(entry)\n"),
    )),
    Trick("complete-inline", "complete writes out _end_lease and _ended for a lease that ends there", (
        ("        self._load[t.worker] -= 1\n"
         "        entry = t.entry\n"
         "        t.status = _SUCCEEDED\n"
         "        t.worker = t.token = t.expires_at = t.entry = None  # first: a rebuild below must see entry as stale\n"
         "        t.cancel_requested = False\n"
         "        if expiry[0] is entry:\n"
         "            heappop(expiry)\n"
         "        else:\n"
         "            self._expiry_stale += 1\n"
         "            self._compact_expiry()\n"
         "        t.ended_at = now\n"
         "        self._final.append(task_id)\n",
         "        self._end_lease(t, _SUCCEEDED)\n"
         "        self._ended(t, task_id, now)\n"),
    )),
    Trick("exact-type-checks", "submit, dispatch, complete test exact types inline, validators only on a miss", (
        ("        if (type(priority) is not int or type(due_at) is not int or not 0 <= due_at <= self._now\n"
         "                or type(retry_delay) is not int or not 1 <= retry_delay <= _INT_MAX or not _INT_MIN <= priority <= _INT_MAX\n"
         "                or (max_attempts is not None and (type(max_attempts) is not int or not 1 <= max_attempts <= _INT_MAX))):\n",
         "        v.check_submit(priority, due_at, max_attempts, retry_delay)\n"
         "        if due_at > self._now:\n"),
        ("        capacity = self._capacity.get(worker) if type(worker) is str else None\n"
         "        if (capacity is None or type(now) is not int or now < self._now or type(duration) is not int or duration < 1\n"
         "                or now + duration > _INT_MAX):\n"
         "            capacity = self._check_dispatch(worker, now, duration)\n",
         "        capacity = self._check_dispatch(worker, now, duration)\n"),
        ("        tasks = self._tasks\n"
         "        t = tasks[task_id - self._first] if type(task_id) is int and 0 <= task_id - self._first < len(tasks) else None\n"
         "        if (t is None or type(token) is not int\n"
         "                or not _INT_MIN <= token <= _INT_MAX or type(now) is not int or not self._now <= now <= _INT_MAX):\n"
         "            self._check_lease_call(task_id, token, now)\n"
         "            t = self._at(task_id)\n",
         "        self._check_lease_call(task_id, token, now)\n"
         "        t = self._at(task_id)\n"),
    )),
    Trick("skip-advance", "dispatch and complete skip _advance_to when no heap head is due", (
        ("        if (expiry and expiry[0][0] <= now) or (self._due and self._due[0][0] <= now):\n"
         "            self._advance_to(now)\n"
         "        else:\n"
         "            self._now = now\n"
         "        load = self._load\n",
         "        self._advance_to(now)\n"
         "        load = self._load\n"),
        ("        if (expiry and expiry[0][0] <= now) or (self._due and self._due[0][0] <= now):\n"
         "            self._advance_to(now)\n"
         "        else:\n"
         "            self._now = now\n"
         "        if type(t) is not _Task:",
         "        self._advance_to(now)\n"
         "        if type(t) is not _Task:"),
    )),
    Trick("status-names", "Status members bound to module names (_RUNNING), not looked up on the enum", tuple(
        (f"{prefix}_{name}", f"{prefix}Status.{name}")
        for prefix, name in (("t.status = ", "RUNNING"), ("t.status = ", "SUCCEEDED"),
                             ("self.status = ", "PENDING"))
    )),
)


def without(trick: Trick) -> type:
    """``IndexedScheduler`` with ``trick`` taken out: the module's source rewritten and loaded anew.

    Raises:
        TrickGone: a rewrite's old text is not in the source exactly once.
    """
    source = Path(indexed.__file__).read_text(encoding="utf-8")
    for old, new in trick.rewrites:
        found = source.count(old)
        if found != 1:
            raise TrickGone(f"trick {trick.name!r}: its code is in impl/indexed.py {found} times, not once: "
                            f"{old.strip().splitlines()[0]!r}; update fencepost/bench/tricks.py and docs/design.md")
        source = source.replace(old, new)
    module = types.ModuleType(f"{indexed.__name__}_without_{trick.name.replace('-', '_')}")
    module.__file__ = indexed.__file__
    exec(compile(source, f"{indexed.__file__} without {trick.name}", "exec"), module.__dict__)
    return module.IndexedScheduler


@dataclass(frozen=True)
class TrickRow:
    """One scheduler (the shipped one when ``trick`` is None) at every size: timings and bytes per task."""

    trick: Trick | None
    timings: dict[int, Timing]
    bytes: dict[int, float]


def measure(sizes: Sequence[int], cycles: int, repeats: int, seed: int = 0,
            progress: Callable[[str], None] = lambda line: None) -> list[TrickRow]:
    """The shipped scheduler and each trick's variant at every size, timed in turns; memory after."""
    factories: dict[Trick | None, type] = {None: indexed.IndexedScheduler}
    factories.update((trick, without(trick)) for trick in TRICKS)
    loops = {}
    for size in sizes:
        progress(f"  building {len(factories)} schedulers of {size:,} pending tasks")
        for trick, factory in factories.items():
            loops[trick, size] = cycle_loop(factory, size, cycles, seed)
    progress(f"  timing {len(loops)} loops, {repeats} turns each")
    timings = timed(loops, repeats, cycles)
    loops.clear()
    progress("  memory")
    return [TrickRow(trick, {size: timings[trick, size] for size in sizes},
                     {size: bytes_per_task(factory, size, seed) for size in sizes})
            for trick, factory in factories.items()]


def format_tricks(rows: Sequence[TrickRow]) -> str:
    """The table: ns per cycle and bytes per task with every trick, then the cost of taking each out."""
    shipped = rows[0]
    sizes = sorted(shipped.timings)
    head = ["trick taken out".ljust(18)] + [f"ns at {size:,}".rjust(19) for size in sizes] + \
           [f"cost at {size:,}".rjust(17) for size in sizes] + [f"B/task at {size:,}".rjust(19) for size in sizes]
    lines = ["".join(head)]
    for row in rows:
        name = "(none: as shipped)" if row.trick is None else row.trick.name
        cells = [name.ljust(18)]
        cells += [f"{row.timings[s].best_ns:,.0f} ({row.timings[s].median_ns:,.0f})".rjust(19) for s in sizes]
        cells += [("" if row.trick is None else f"{row.timings[s].best_ns / shipped.timings[s].best_ns - 1:+.1%}").rjust(17)
                  for s in sizes]
        cells += [f"{row.bytes[s]:,.0f}".rjust(19) for s in sizes]
        lines.append("".join(cells))
    lines += [
        "",
        "ns per submit + dispatch + complete cycle, best of the repetitions (median in brackets), all in turns;",
        "cost: best against the shipped scheduler's best. Bytes: tracemalloc while the tasks are submitted.",
        f"cycles x repetitions: {shipped.timings[sizes[0]].cycles} x {shipped.timings[sizes[0]].repeats}.",
        "",
    ]
    lines += [f"{trick.name}: {trick.what}" for trick in TRICKS]
    return "\n".join(lines)


def run(sizes: Sequence[int] | None, cycles: int | None, repeats: int | None, seed: int) -> int:
    """Measure and print the table; 0."""
    sizes = tuple(sizes or SIZES)
    print(f"fencepost bench --tricks: IndexedScheduler with each speed trick taken out, "
          f"sizes {', '.join(f'{s:,}' for s in sizes)}", flush=True)
    rows = measure(sizes, cycles or 500, repeats or 51, seed, progress=lambda line: print(line, flush=True))
    print()
    print(format_tricks(rows))
    return 0
