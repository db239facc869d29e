"""The checkers: everything that decides whether a scheduler keeps the contract.

* ``machine``: the Hypothesis ``RuleBasedStateMachine`` that drives the model and
  a scheduler in lockstep; ``check`` runs it (``fencepost check``); ``coverage``
  declares the outcomes a check must reach.
* ``explore``: bounded exhaustive search of every call in a small scope.
* ``replay``: runs a scenario file and checks its expectations (``fencepost replay``).
* ``linearize``: whether a concurrent history could come from the model (``fencepost linearize``);
  ``linearize_cost`` measures how its cost grows with concurrency.
"""
