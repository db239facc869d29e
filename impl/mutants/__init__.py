"""Deliberately broken schedulers, one per pitfall the seeds name; the spec must reject each.

Each module holds a zero-argument factory class ``Scheduler`` that is a correct
implementation (``impl.simple.SimpleScheduler`` or, for the heap pitfall,
``impl.indexed.IndexedScheduler``) with one method overridden to carry the
bug, and a docstring naming the pitfall and the seed text it comes from.
``tests/spec/test_mutants.py`` checks that ``fencepost check`` rejects every
one with a short counterexample; ``fencepost check impl.mutants.NAME:Scheduler``
shows it.

``CRASH_MUTANTS`` are durable schedulers whose bug shows only when the
process dies: they conform to every sequence of calls in one process, and
``fencepost crash impl.mutants.NAME:Scheduler`` is what catches them
(``tests/spec/test_crash.py``). Their factories take a path.
"""

#: One line per mutant: the pitfall it carries.
DESCRIPTIONS: dict[str, str] = {
    "worker_identity": "a lease call is accepted when its token's lease went to the same worker, not only for the current token",
    "token_reuse": "a reassigned task keeps the token of its first lease instead of getting a fresh one",
    "closed_interval": "a lease is alive at exactly expires_at: [start, expires] instead of [start, expires)",
    "dispatch_consumes_token": "a dispatch that returns None still consumes a token",
    "string_ids": "ties are broken by ids compared as text, so task_10 is dispatched before task_2",
    "boolean_assigned": "assignment is one boolean, so a completed task becomes pending and is dispatched again",
    "no_release_on_complete": "a completion does not free the worker's slot",
    "expire_before_validation": "dispatch expires leases before checking its worker and duration, so an invalid call still expires them",
    "cancelled_dispatched": "dispatch does not exclude cancelled tasks, so a cancelled task starts",
    "stale_heap_revives": "cancel leaves the heap entry live, so the indexed scheduler dispatches a cancelled task from it",
    "retry_at_failure_time": "fail makes the task due again at the failure time instead of after its backoff",
    "attempt_off_by_one": "max_attempts=N allows N + 1 dispatches",
    "prune_unfinished": "prune forgets waiting tasks due before the bound, not only final ones",
    "prune_at_before": "prune forgets a task that ended exactly at before (<= instead of <)",
    "prune_recounts": "after a prune, the next id and token are counted from the tasks left, so forgotten ones are reused",
    "prune_keeps_answering": "a pruned task still answers task() instead of raising that it was forgotten",
    "batch_not_atomic": "submit_many keeps the entries before an invalid one: a batch that is not all or nothing",
    "dispatch_many_over_capacity": "dispatch_many checks the worker's room once per batch, so a batch overfills the worker",
    "dispatch_many_twice": "dispatch_many wraps around its candidate snapshot and hands a task out twice in one batch",
    "complete_many_trusts_batch": "complete_many accepts a stale token once an earlier report in the batch was accepted",
    "narrow_ints": "ints are kept as doubles, so an int argument of 2**53 or more is refused where the contract allows 2**63 - 1",
}

#: Mutants whose bug is in a batch operation: only a check that drives batches (capability
#: ``batch``) can see them.
BATCH_MUTANTS = ("batch_not_atomic", "dispatch_many_over_capacity", "dispatch_many_twice", "complete_many_trusts_batch")

#: Mutant name -> the ``MODULE:FACTORY`` that ``fencepost check`` takes.
MUTANTS: dict[str, str] = {name: f"fencepost.impl.mutants.{name}:Scheduler" for name in DESCRIPTIONS}

#: Durable mutants, caught by ``fencepost crash`` rather than ``fencepost check``: name -> pitfall.
CRASH_DESCRIPTIONS: dict[str, str] = {
    "durable_ack_before_commit": "a call returns before its transaction commits, so a process killed between calls loses the last one",
}

#: Durable mutant name -> the ``MODULE:OPENER`` that ``fencepost crash`` takes.
CRASH_MUTANTS: dict[str, str] = {name: f"fencepost.impl.mutants.{name}:Scheduler" for name in CRASH_DESCRIPTIONS}
