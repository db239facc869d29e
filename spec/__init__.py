"""fencepost's executable reference specification of lease-based task scheduling.

The rules are in three files, the contract:

* ``protocol``: the vocabulary -- statuses, the values a scheduler hands out
  (``Lease``, ``Outcome``, ``TaskView``), rejection reasons, the methods.
* ``model``: the reference model, plain data and pure transitions, guards first.
* ``invariants``: the safety invariants, each named after what it states.

Beside them: ``variants`` (the documented choices a queue may declare, and
the core they never switch off), ``checkers/`` (what decides whether a
scheduler keeps the contract: the state machine, ``check``, ``explore``,
``replay``, ``linearize`` ...), ``formats/`` (the files fencepost reads and
writes: scenarios, traces, histories ...), ``adapters/`` (schedulers in other
processes: ``--exec``), ``arguments`` (what the command line and the library
share: exit statuses, ``UsageError``, loading ``MODULE:NAME``), the
Hypothesis profiles (``profiles``) and the pytest helper (``testing``).
Nothing here imports the schedulers (``impl/``) or anything above them; the
command line is ``fencepost/commands/``, the broken schedulers the checkers
must catch are ``impl/mutants/``.
"""
