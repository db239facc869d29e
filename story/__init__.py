"""The story layer: what a scenario shows a person, below the TUI and the report.

``timeline`` turns a scenario into frames (the board at each step, from the
model and from the implementation), ``narration`` says in words what a step
did, ``rows`` are the task rows both views draw, ``quiz`` keeps a
walkthrough's predict-then-reveal questions, ``glossary`` the terms the
lessons teach, ``walkthroughs`` the built-in lessons beside their loader, and
``shipped`` which shipped scheduler opens a scenario. Nothing here imports
Textual or writes HTML: ``tui/`` and ``report/`` draw what this layer says.
"""
