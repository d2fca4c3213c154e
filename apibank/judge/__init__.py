"""Judging predictions: call parsing (both protocols), per-call judging, scoring, ROUGE-L, gold replay.

* :mod:`.parsing` -- the paper protocol's regex semantics and the corrected ``ast`` parser;
* :mod:`.categories` -- the error categories and how each protocol assigns them;
* :mod:`.judging` -- one predicted call against its gold call, executed in a fresh session;
* :mod:`.retriever` -- the ToolSearcher model as judges share it (cached selections);
* :mod:`.scoring` -- :func:`score`, the entry point of the metric (arguments validated once);
* :mod:`.aggregate` -- verdicts and response scores summed into the result's figures;
* :mod:`.worker` and :mod:`.process` -- judging in a forked worker whose deadline and memory cap bind;
* :mod:`.references` -- the dataset rows' ``reference`` field, validated;
* :mod:`.rouge` -- ROUGE-L as the original evaluator computes it;
* :mod:`.replay` -- every recorded gold call executed and compared with its recorded result.
"""
