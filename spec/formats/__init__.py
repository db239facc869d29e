"""The file formats fencepost reads and writes, apart from the rules they carry.

* ``scenario``: the scenario format (TOML or JSON): steps, notes, expectations.
* ``trace``: writing a run (a counterexample) out as a scenario.
* ``values``: the JSON forms of the protocol's values (results on the wire, in histories).
* ``adapter``: the ``--exec`` adapter protocol's lines (requests out, answers in).
"""
