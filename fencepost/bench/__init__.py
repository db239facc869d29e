"""Every measurement fencepost makes, started one way: ``fencepost bench``.

One module a subject: ``schedulers`` (the in-memory schedulers against a bare
heap, the command's default), ``tricks`` (what each speed trick buys),
``durable``, ``postgres`` and ``peers`` (storage, against its floors and the
third-party queues), ``runner``, ``shared_runner`` and ``soak`` (the runner),
``tui`` (a step of the terminal UI), ``report`` (writing a page),
``linearize`` and ``variants`` (what a checker's options cost), and
``timing`` (the repeat-and-alternate loop they share). Measurements sit on
top of the layers, beside the command line: they may import anything.
"""
