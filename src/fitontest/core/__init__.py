"""Foundation layer: the registry, input validation, atomic file I/O, and the
thread and device helpers. Imports nothing else from fitontest."""
