"""fencepost's executable reference specification of lease-based task scheduling.

The rules are in three files, the contract:

* ``protocol``: the vocabulary -- statuses, the values a scheduler hands out
  (``Lease``, ``Outcome``, ``TaskView``), rejection reasons, the methods.
* ``model``: the reference model, plain data and pure transitions, guards first.
* ``invariants``: the safety invariants, each named after what it states.

Apart from them: ``checkers/`` (what decides whether a scheduler keeps the
contract: the state machine, ``check``, ``explore``, ``replay`` ...),
``formats/`` (the files fencepost reads and writes: scenarios, traces ...),
``mutants/`` (broken schedulers the checkers must catch), ``adapters/``
(schedulers in other processes: ``--exec``), and the command
line (``cli``), the Hypothesis profiles (``profiles``) and the pytest helper
(``testing``).
"""
