"""The file formats fencepost reads and writes, apart from the rules they carry.

* ``scenario``: the scenario format (TOML or JSON): steps, notes, expectations.
* ``trace``: writing a run (a counterexample) out as a scenario.
"""
