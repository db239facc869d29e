"""``fencepost report``: one self-contained HTML page of a scenario, a counterexample or a history.

A page opens anywhere with no network (inline CSS and SVG, one small inline
script, a Content-Security-Policy that forbids fetching anything) and shows
every value it read as text. The folder sits on top of ``spec/`` like the TUI:
it imports the formats, the checkers and the narration, and nothing below
imports it.
"""
