"""inspect-ai tasks of the benchmark (registered for ``inspect eval`` through ``_registry``)."""
