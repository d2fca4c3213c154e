"""Judging predictions: call parsing (both protocols), per-call judging, scoring, ROUGE-L, gold replay.

* :mod:`.parsing` -- the paper protocol's regex semantics and the corrected ``ast`` parser;
* :mod:`.judging` -- one predicted call against its gold call, executed in a fresh session;
* :mod:`.scoring` -- :func:`score`, the entry point of the metric;
* :mod:`.rouge` -- ROUGE-L as the original evaluator computes it;
* :mod:`.replay` -- every recorded gold call executed and compared with its recorded result.
"""
