"""The file formats fencepost reads and writes, apart from the rules they carry.

* ``scenario``: the scenario format (TOML or JSON): steps, notes, expectations.
* ``trace``: writing a run (a counterexample) out as a scenario.
* ``history``: concurrent histories (JSON lines of invoke/ok/info events), their recorder.
* ``values``: the JSON forms of the protocol's results, shared by histories and ``--exec``.
"""
