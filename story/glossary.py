"""The glossary: every term the walkthroughs use, as the help screen shows it.

Each ``Term`` has a headword, the pattern its forms take in prose (matched
case-insensitively as whole words), and one or two sentences of meaning. The
walkthroughs' ``meta.teaches`` name headwords; ``tests/spec/test_curriculum.py``
checks that a walkthrough uses only terms the glossary defines and an earlier
(or the same) walkthrough teaches. Plain data: importing this needs no Textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Term:
    """One glossary entry; ``forms`` is a regular expression for the words that name it."""

    word: str
    forms: str
    meaning: str
    pattern: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Whole words only, and never part of an identifier: "lease" is not in "lease_expired".
        compiled = re.compile(rf"(?<![\w`-])(?:{self.forms})(?![\w-])", re.IGNORECASE)
        object.__setattr__(self, "pattern", compiled)

    def first_use(self, text: str) -> int | None:
        """Where ``text`` first names this term, or None. O(len(text))."""
        match = self.pattern.search(_plain(text))
        return match.start() if match else None


def _plain(text: str) -> str:
    """Prose with code spans' backticks kept apart, so `` `dispatch` `` names dispatch."""
    return text.replace("`", " ` ")


GLOSSARY: tuple[Term, ...] = (
    Term("task", r"tasks?|task_id|task ids?", "A unit of work the scheduler tracks. `submit` numbers them 1, 2, 3, ... in submit order; "
         "the id is a number, not a name."),
    Term("worker", r"workers?|add_worker", "Whatever asks for work and does it (a process, a thread). It joins with `add_worker` "
         "and a capacity."),
    Term("capacity", r"capacity|capacities", "How many leases a worker may hold at the same time. It limits "
         "simultaneous assignments, not requests per minute."),
    Term("slot", r"slots?", "One unit of a worker's capacity: a lease holds one from dispatch until it ends "
         "(complete, fail or expiry), and frees it at that moment."),
    Term("submit", r"submit|submits|submitted|submitting", "Adds a task, `pending`. Takes no time and expires nothing."),
    Term("priority", r"priority|priorities", "Any int within 64 bits; higher is dispatched first."),
    Term("pending", r"pending", "Waiting for a dispatch: never started, or taken back after its lease expired."),
    Term("waiting", r"waiting", "Neither running nor final: `pending`, or `retry_wait` after a `fail`. A waiting "
         "task is handed out once it is due, a worker with room asks, and no eligible task comes before it in dispatch order."),
    Term("dispatch", r"dispatch|dispatches|dispatched", "A worker asks for work at `now` for a `duration`: the "
         "scheduler leases it the first task in dispatch order, or answers `none` (the worker is full, or nothing "
         "is eligible) and then assigns nothing and uses no token."),
    Term("lease", r"leases?|leased|started_at|expires_at", "A task lent to one worker for a bounded time, the half-open interval "
         "`[started_at, expires_at)`, under a fresh token."),
    Term("token", r"tokens?|lease tokens?", "The number that identifies one lease: a scheduler-wide counter, "
         "a new value for every lease, never reused. Reports must quote it."),
    Term("duration", r"durations?", "How long a lease lasts: `expires_at = now + duration`, at least 1, and "
         "`now + duration` within 64 bits."),
    Term("half-open interval", r"half-open( intervals?)?", "`[a, b)` contains `a` and not `b`: a lease "
         "`[5, 10)` is alive at 5 and at 9, and over at exactly 10."),
    Term("running", r"running", "Leased to a worker: the task has a worker, a token and an `expires_at`."),
    Term("logical time", r"logical time|logical clock|integer time|clock", "Time is an int the caller passes "
         "as `now`, starting at 0 and never going backwards; nothing sleeps, so a test can hit a boundary exactly."),
    Term("timed call", r"timed calls?", "A call that says what time it is (`dispatch`, `complete`, `fail`, "
         "`cancel`, `renew`, `advance`, and the optional `prune`, `dispatch_many`, `complete_many` and "
         "`fail_many`). A valid one first ends every lease with `expires_at <= now`, before "
         "anything else; an invalid one is an error and changes nothing. `add_worker` and `submit` are not timed."),
    Term("advance", r"advance|advances|advanced", "A timed call that only moves the clock, and so expires "
         "the leases that end by then."),
    Term("expiry", r"expiry|expiries|expires?|expired|expiring", "A lease reaching its `expires_at` ends: its "
         "task goes back to `pending` (or ends `cancelled` or `failed`, see those). It proves nothing about "
         "the work, which may have finished, stalled, or still be running."),
    Term("complete", r"complete|completes|completed|completion|completions", "A worker reports success, "
         "quoting its token. Accepted only if the task runs under that token and `now < expires_at`."),
    Term("accepted", r"accepted|accepts?", "A report the scheduler acted on: `Outcome(accepted=True)`."),
    Term("rejected", r"rejected|rejects?|rejection|rejections|refused|refuses?", "A report the scheduler did "
         "not act on: `accepted=False` with a reason (advice: only `accepted` is the contract). No task changes "
         "because of it, but it is a valid timed call, so the clock moves and due leases expire. A rejection is "
         "an answer, not an error."),
    Term("succeeded", r"succeeded", "Final: a completion was accepted."),
    Term("final", r"final", "`succeeded`, `failed` and `cancelled`: a task in one never changes again and "
         "never starts again."),
    Term("renew", r"renew|renews|renewed|renewal|renewals|renewing", "Extends a lease: `expires_at = now + "
         "duration`, same token (it may also shorten it). Refused once the lease has ended or a cancel was "
         "requested."),
    Term("heartbeat", r"heartbeats?", "A renew a worker sends regularly while it works, so its lease lasts as "
         "long as the work does and ends soon after the worker stops, or pauses for longer than the lease."),
    Term("stale_token", r"stale_token|stale tokens?", "Rejection reason: the task is running under another "
         "token than the one quoted, whatever that token is (older, newer, or never issued). Usually the report "
         "comes from an assignment that is over."),
    Term("lease_expired", r"lease_expired", "Rejection reason: this token's lease was the task's last one and it "
         "expired; nobody holds the task now. Once the task is leased again, the same token gets "
         "`stale_token` while it runs, `not_running` while it waits again (that lease failed or expired), "
         "and `already_final` once it is final."),
    Term("already_final", r"already_final", "Rejection reason: the task is final: a duplicate of the "
         "accepted report and a late report from an older lease get it alike, and so does a `cancel`. The one "
         "exception is the token of the task's last lease when that lease expired: it gets `lease_expired` even when that expiry "
         "ended the task `failed` or `cancelled`. It means \"an outcome is recorded, stop\", not \"your work "
         "failed\" nor \"yours was the one that counted\"."),
    Term("not_running", r"not_running", "Rejection reason: the task is waiting (`pending` or `retry_wait`) and the "
         "token is not that of the task's last lease (when that lease expired), e.g. a report for a task never dispatched, or a second "
         "`fail` with a token whose lease that first `fail` ended."),
    Term("fencing token", r"fencing tokens?", "A token that a destination (a database, a file store) checks on "
         "every write, refusing, for the same task or key, any lower than the highest it has seen for it. "
         "fencepost's tokens increase across the whole scheduler, so they order one task's leases, not "
         "different tasks': a mark per account would refuse another task's live token."),
    Term("fencing", r"fencing(?! tokens?)|fenced?|fences", "Refusing writes from an assignment that is over, by its token, at "
         "the place the write lands. This scheduler fences only its own state; anything else must check the "
         "token itself."),
    Term("at-least-once", r"at-least-once", "What leases give: a task whose lease expires may run again (when "
         "someone dispatches it, unless its budget is spent or a cancel was requested), so its work may run "
         "more than once. Effects must be idempotent; fencing is an addition (the `at-least-once` lesson)."),
    Term("idempotent", r"idempotent|idempotency( keys?)?", "Safe to repeat: doing it twice has the effect of "
         "doing it once, e.g. a write keyed by an idempotency key the destination remembers."),
    Term("due time", r"due times?|due_at|due", "`due_at`: a task may not start before it (a task due at 20 may "
         "start at 20). Without one, a task is due when submitted."),
    Term("eligible", r"eligible", "May be dispatched now: `pending` or `retry_wait`, and due."),
    Term("dispatch order", r"dispatch order|tie-break|tie-breaks|ties?|tied", "Highest priority first; then the "
         "earliest due time; then the lowest task id, compared as a number (2 before 10)."),
    Term("none", r"none", "What a dispatch returns when it leases nothing: assigns nothing, uses no token, "
         "consumes no id."),
    Term("error", r"errors?|invalid|ValueError", "An invalid call (a bad value, time going backwards, an unknown "
         "worker or task id) raises `ValueError` naming the argument, the value and the rule, and changes nothing: "
         "no expiry, no time change, no id or token used."),
    Term("reason", r"reasons?", "Why a report was rejected (`stale_token`, `lease_expired`, `already_final`, "
         "`not_running`, `cancel_requested`): advice for the worker. Only `accepted` is the contract; "
         "`fencepost check` compares nothing else, so another scheduler may word reasons its own way."),
    Term("argument rules", r"argument rules?", "What every argument must be, checked before anything happens: an "
         "int argument an `int` and never a `bool`; `capacity`, `duration`, `retry_delay`, `max_attempts` (and a batch's `limit`) at least "
         "1; `now` and `due_at` at least 0 (a `due_at` already past is due at once); every int within 64 bits; a "
         "worker name and a key a non-empty `str` of at most 8,192 UTF-8 bytes with no control character but tab and "
         "newline, no lone surrogate and no direction override or isolate. Breaking one is an error."),
    Term("key conflict", r"key conflicts?", "A known idempotency key submitted with other arguments, compared as "
         "passed (a left-out `due_at` is not the time it stood for): an error naming the key, the task and what "
         "differs; nothing changes."),
    Term("expired attempt", r"expired attempts?", "An attempt whose lease expired: it counts against "
         "`max_attempts` like a failed one, but has no backoff: the task is pending and eligible at once (or "
         "`failed`, with the budget spent, or `cancelled` after a cancel request)."),
    Term("task view", r"task views?|views?", "What `task(id)` returns: a detached snapshot of nine fields. "
         "`worker`, `token` and `expires_at` are set only while running, `cancel_requested` only while a request "
         "stands: every way a lease ends clears them. Keys are not in it."),
    Term("same instant", r"same instant", "Two things at one logical time: a lease ending at t and a call at t. "
         "The expiry comes first, so at exactly `expires_at` a `complete`, `renew` or `cancel` finds the lease over."),
    Term("liveness", r"liveness", "That something good eventually happens (a task eventually runs). fencepost "
         "specifies safety only: what may happen when someone calls. Nothing expires or starts unless someone "
         "makes a timed call."),
    Term("fail", r"fail|fails", "A worker reports that its task went wrong, quoting its token. The task waits in "
         "`retry_wait`, or ends `failed` when its attempts are spent, or `cancelled` if a cancel was requested."),
    Term("attempt", r"attempts?|max_attempts|tries|budget", "Every dispatch of a task is one attempt. `max_attempts` "
         "(the budget) caps them; left out, attempts are unlimited."),
    Term("retry_wait", r"retry_wait|retry|retries|retried|retrying", "Waiting out a backoff after an accepted "
         "`fail`; it has run at least once. Eligible again at its new due time."),
    Term("backoff", r"backoffs?|retry_delay", "The wait before a retry: `retry_delay * 2 ** (attempts - 1)` after the "
         "failure, so 1, 2, 4, ... with `retry_delay = 1`. It doubles with no cap of its own; a `fail` whose retry time would pass the 64-bit range is an error."),
    Term("failed", r"failed", "Final: the last allowed attempt ended in `fail`, or its lease expired."),
    Term("cancel", r"cancel|cancels|cancelling|cancellation|cancellations", "Stops a task that has not finished. "
         "A waiting task (`pending`, `retry_wait`) is `cancelled` at once; a running one only gets a request "
         "(cooperative)."),
    Term("cancel requested", r"cancel requested|cancel_requested|cancel req|cancel request|cancel requests",
         "A running task someone cancelled: it keeps its lease and its slot; renew is refused (reason "
         "`cancel_requested`); `complete` still succeeds; `fail` or expiry ends it `cancelled`."),
    Term("cancelled", r"cancelled", "Final: cancelled while waiting, or its lease ended by `fail` or expiry after "
         "a cancel request. After an expiry it says nothing about whether the work ran."),
    Term("cooperative", r"cooperative|cooperatively", "Cancellation that relies on the worker to notice (a refused "
         "renew) and stop; the scheduler cannot stop work it does not run."),
    Term("closed-interval bug", r"closed-interval bug|closed intervals?|off-by-one", "Treating a lease as "
         "`[start, end]`, alive at exactly `end`: a completion at `expires_at` accepted, a slot freed one tick late. "
         "A bug against this contract; a queue that documents it declares the variant `interval=closed`."),
    Term("heap", r"heaps?", "A priority queue: the indexed scheduler keeps waiting tasks and running leases in "
         "heaps, so the next pick or expiry costs O(log n), not a scan."),
    Term("durable", r"durable|durability", "Kept on disk: the durable scheduler (`impl.durable`) commits every call "
         "to one SQLite file before it returns, so a crash loses no call that returned and none half-done."),
    Term("restart", r"restarts?|restarted|restarting|reopen|reopens|reopened", "The scheduler's process starts "
         "again and reads its file (`reopen()`). Nothing special happens: leases keep their end, and a task "
         "whose worker died comes back at its lease's expiry."),
    Term("key", r"key", "An idempotency key given to `submit`: the same key with the same arguments returns the "
         "first task's id and creates nothing; with other arguments it is an error. Kept as long as its "
         "task is, across restarts of a durable scheduler (an in-memory one loses every key): only a prune "
         "of the final task forgets it."),
    Term("exactly-once", r"exactly-once|exactly once", "What no scheduler can promise for effects outside it: a "
         "retry may repeat work. A destination that checks a key and a token in the same transaction as the "
         "write (an effect ledger) makes that write happen once; an outside call (a card charge) is covered only "
         "if its own destination checks a key."),
    Term("stale entry", r"stale (heap )?entry|stale (heap )?entries|lazy deletion|compaction|compacted", "A heap entry for a task "
         "that has since changed (cancelled while waiting, renewed, or finished while running with its entry "
         "below the head; an entry at the head is popped at once, as a dispatch pops the entry it uses). It is "
         "not removed at once (lazy deletion) but skipped when it reaches the top, after checking the task's "
         "current state; the heap is rebuilt (compaction) once stale entries are more than half of it and more "
         "than 64."),
    Term("prune", r"prune|prunes|pruned|pruning", "A timed call, `prune(before, now)`, that forgets every final "
         "task that ended before `before` (at most `now`), and its key: the key may then make a new task. A "
         "forgotten id is never reused, and asking for it is an error."),
    Term("batch", r"batch|batches|submit_many|dispatch_many|complete_many|fail_many", "One call standing for "
         "its single calls in order (`submit_many`, `dispatch_many`, `complete_many`, `fail_many`): all or "
         "nothing when an entry is invalid; a `dispatch_many` stops at the first dispatch that finds nothing."),
    Term("clock skew", r"clock skew|skew|skewed", "Two clocks that disagree. A client whose clock runs ahead "
         "expires other workers' leases early; a call from one behind is an error, since time may not go backwards. So "
         "every client reads one shared clock (the scheduler's or the database's)."),
    Term("declared variant", r"declared variants?|variants?", "A documented choice where a real queue differs "
         "from the contract on purpose (`order=any`, `interval=closed`, `tokens=opaque`, ...). A scheduler "
         "declares its variants and is checked against them; no variant changes the safety core."),
    Term("safety core", r"safety core|core", "What no variant changes: a task has at most one live lease; a "
         "token is never issued twice; while a lease is live only its token acts on it; a final task never "
         "runs again; a cancelled waiting task never starts; nothing starts before its due time."),
    Term("process isolation", r"process isolation|force=True", "The runner's `isolation=\"process\"`: each "
         "attempt runs in a child process, terminated when its lease expires or on `cancel(task_id, "
         "force=True)`, which raises an error with threads (a thread cannot be killed). A terminated attempt may "
         "have done part of its effects."),
    Term("runner", r"runners?", "fencepost's executing pool (`fencepost.impl.runner.Runner`): each pool slot is a "
         "worker of capacity one whose thread dispatches a task, calls its function, and reports `complete` "
         "(it returned) or `fail` (it raised). `fencepost demo` shows one at work."),
    Term("user work", r"user work|user functions?", "The function a task runs, called as `fn(ctx)`. The runner "
         "never holds the scheduler's lock while it runs, so it may submit tasks and other threads may cancel "
         "meanwhile; `ctx.heartbeat()` renews its lease."),
    Term("lock", r"locks?|locked", "What makes a scheduler shared by threads take one call at a time: each call "
         "holds it for its own bookkeeping only. The runner never holds it while user work runs."),
    Term("mutant", r"mutants?", "A copy of a scheduler with one deliberate bug (`impl/mutants/`). The spec must "
         "reject every one; a walkthrough opened on one (`--impl impl.mutants.NAME:Scheduler`) shows where it "
         "goes wrong."),
    Term("zombie", r"zombies?", "Work still running after its lease expired: the task is handed out again and the "
         "zombie's late report is rejected, but the work ran twice and its outside effects stay (make them "
         "idempotent, and fence them too)."),
)

#: Headword -> term.
BY_WORD: dict[str, Term] = {term.word: term for term in GLOSSARY}


def glossary_markdown() -> str:
    """The glossary as a Markdown table, alphabetical, for the help screen."""
    rows = [f"| **{term.word}** | {term.meaning} |" for term in sorted(GLOSSARY, key=lambda t: t.word.lower())]
    return "| Term | Means |\n|---|---|\n" + "\n".join(rows)
