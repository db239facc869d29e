from impl.simple import SimpleScheduler as IndexedScheduler  # placeholder until impl/indexed.py lands
