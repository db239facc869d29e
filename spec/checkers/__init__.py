"""The checkers: everything that decides whether a scheduler keeps the contract.

Driving a scheduler beside the model:

* ``machine``: the Hypothesis ``RuleBasedStateMachine`` that drives the model and a
  scheduler in lockstep; ``lockstep`` compares them call by call; ``results`` puts
  results in comparable form and in words; ``invalid_calls`` the calls the protocol
  refuses; ``renaming`` tokens up to renaming (``tokens=opaque``); ``capabilities``
  which optional parts a scheduler offers; ``coverage`` the outcomes and boundaries a
  check must reach; ``deadline`` the deadline on every call (a hang is a finding).
* ``check``: runs the machine (``fencepost check``), in ``shards`` over forked processes (``--jobs``), then ``boundaries``, fixed probes of the
  ends of every value's range (the largest valid, the smallest invalid); ``minimize`` shrinks what it finds,
  ``canonical`` makes the shrunk counterexample as short and batch-free as the bug allows,
  and ``why`` says which rule it breaks, with the values that break it.
* ``realtime``: the same on the wall clock, for queues whose clock cannot be set.
* ``explore``: bounded exhaustive search of every call in a small scope, its large levels cut
  by ``levels`` into parts that forked processes expand (``--jobs``).
* ``replay`` and ``steps``: a scenario file's steps run and judged (``fencepost replay``).
* ``crash``: SIGKILL a durable scheduler mid-run and check what it recovers.

Judging a concurrent history:

* ``linearize``: whether a history could come from the model; ``linearize_states``
  its model states, kept as differences; ``linearize_command`` its report in words;
  ``linearize_realtime`` a history on a real clock, each timed call's ``now``
  unknown inside its measured interval.
"""
