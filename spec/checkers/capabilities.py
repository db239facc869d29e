"""Which optional parts of the protocol a scheduler offers, so the checks cover them.

Two parts of the contract are optional, so that schedulers written before
them can still be checked:

* **idempotency keys**: ``submit(..., key=...)``. Offered when ``submit``
  takes a ``key`` keyword: read from its signature, or, when the signature
  cannot say (a builtin, or ``**kwargs``), by a probe on a throwaway
  instance.
* **restart**: ``reopen()`` returning a scheduler over the same storage, as
  a new process would see it. Offered when the scheduler has a callable
  ``reopen``.
* **prune**: ``prune(before, now)``, forgetting final tasks that ended before
  ``before`` (see ``spec.model.prune``). Offered when the scheduler has a
  callable ``prune``.
* **batch**: ``submit_many``, ``dispatch_many``, ``complete_many`` and
  ``fail_many`` (``spec.protocol.BATCH_OPERATIONS``), the single calls as
  one atomic call. Offered when all four are callable; a scheduler with
  some but not all of them offers none (a check drives all four or none).

A check drives only what is offered and says which parts it skipped.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass

from fencepost.spec.protocol import offers_batches, offers_restart
from fencepost.spec.variants import DEFAULT, Variants

#: The names the capabilities go by in summaries, in the order they are printed.
KEYS = "idempotency keys"
RESTART = "restart"
PRUNE = "prune"
BATCH = "batch"


@dataclass(frozen=True)
class Capabilities:
    """The optional parts of the protocol one scheduler factory offers."""

    keys: bool = False  # submit takes key=
    restart: bool = False  # objects have a callable reopen()
    prune: bool = False  # objects have a callable prune(before, now)
    batch: bool = False  # objects have all four batch operations

    def _named(self) -> tuple[tuple[str, bool], ...]:
        return ((KEYS, self.keys), (RESTART, self.restart), (PRUNE, self.prune), (BATCH, self.batch))

    @property
    def found(self) -> tuple[str, ...]:
        return tuple(name for name, offered in self._named() if offered)

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(name for name, offered in self._named() if not offered)

    def summary(self, uncalled: Mapping[str, str] | None = None) -> str:
        """One clause for a check's summary, e.g. ``optional capabilities checked: restart; skipped: ...``.

        ``uncalled`` maps a capability that is offered but was not called to why not: it is named
        apart (``offered but not called: batch (why)``), never as checked.
        """
        uncalled = uncalled or {}
        checked = ", ".join(name for name in self.found if name not in uncalled) or "none"
        text = f"optional capabilities checked: {checked}"
        for name, why in uncalled.items():
            text += f"; offered but not called: {name} ({why})"
        if self.skipped:
            text += f"; skipped (not offered): {', '.join(self.skipped)}"
        return text


#: Why a check under declared variants does not call a scheduler's batches: the machine's batch rules
#: follow the contract's own choices only, not the ones a variant leaves open (inside a batch too).
BATCHES_UNDER_VARIANTS = "the batch rules run under the contract only, not under declared variants"


def uncalled(capabilities: Capabilities, variants: Variants) -> dict[str, str]:
    """The capabilities ``capabilities`` offers that a check under ``variants`` does not call, each with
    why; the machine and the coverage it must reach leave out the same ones."""
    return {BATCH: BATCHES_UNDER_VARIANTS} if capabilities.batch and variants != DEFAULT else {}


#: What a scheduler shows to be checked for each capability: the line after the summary says it,
#: so a user who copied ``submit(..., key=None)`` learns why keys are checked and how not to be.
EVIDENCE = {
    KEYS: "submit takes a key keyword",
    RESTART: "it has reopen()",
    PRUNE: "it has prune()",
    BATCH: "it has submit_many, dispatch_many, complete_many and fail_many",
}


def evidence(capabilities: Capabilities, uncalled: Container[str] = ()) -> str | None:
    """One line saying why each checked capability is checked and how to leave it out; None if none was.
    ``uncalled`` names offered capabilities the check did not call (``Capabilities.summary`` says why)."""
    checked = [name for name in capabilities.found if name not in uncalled]
    if not checked:
        return None
    reasons = "; ".join(f"{name}: {EVIDENCE[name]}" for name in checked)
    return f"checked because offered ({reasons}); a scheduler leaves one out by not offering it (docs/contract.md: optional capabilities)"


#: What ``detect`` assumes of a scheduler it cannot inspect: nothing optional.
NONE = Capabilities()
#: Everything optional, as the shipped in-memory schedulers plus a reopen() would offer.
ALL = Capabilities(keys=True, restart=True, prune=True, batch=True)


def takes_key(scheduler: object, factory: Callable[[], object] | None = None) -> bool:
    """True when ``scheduler.submit`` accepts a ``key`` keyword.

    Reads the signature; when it has ``**kwargs`` or cannot be read, calls
    ``submit(key=...)`` on a throwaway instance from ``factory`` (a
    ``TypeError`` means no). Never touches ``scheduler``'s state.
    """
    submit = getattr(scheduler, "submit", None)
    if not callable(submit):
        return False
    try:
        parameters = inspect.signature(submit).parameters
    except (TypeError, ValueError):
        parameters = None
    if parameters is not None:
        if "key" in parameters and parameters["key"].kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            return True
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return False
    if factory is None:
        return False
    return _probe_key(factory)


def offers_prune(scheduler: object) -> bool:
    """True when ``scheduler`` has a callable ``prune``: the optional retention operation."""
    return callable(getattr(scheduler, "prune", None))


def _probe_key(factory: Callable[[], object]) -> bool:
    """Submit with a key on a fresh instance; it offers keys unless that raises TypeError."""
    try:
        throwaway = factory()
    except Exception:  # noqa: BLE001 - a factory that cannot make a probe instance offers no keys to probe
        return False
    try:
        throwaway.submit(key="capability-probe")
    except TypeError:
        return False
    except Exception:  # noqa: BLE001 - it took the keyword and refused something else: still offered
        return True
    finally:
        close_scheduler(throwaway)
    return True


def close_scheduler(scheduler: object) -> None:
    """``scheduler.close()`` when it has one: a probe's sample, or a check run's scheduler once the run is over.

    An error from it is ignored: the verdict is about the protocol's calls, and
    closing is no protocol call. A hang in it is still a hang: a watched
    scheduler's ``close`` runs under the call deadline like any other call.
    """
    close = getattr(scheduler, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - see the docstring
            pass


def detect(factory: Callable[[], object]) -> Capabilities:
    """The optional capabilities of the schedulers ``factory`` makes (one sample instance).

    Raises:
        Exception: whatever ``factory()`` raises (callers probe it first).
    """
    sample = factory()
    try:
        return Capabilities(keys=takes_key(sample, factory), restart=offers_restart(sample), prune=offers_prune(sample),
                            batch=offers_batches(sample))
    finally:
        close_scheduler(sample)
