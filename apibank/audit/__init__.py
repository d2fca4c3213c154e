"""API-Bank Verified: every test row audited, with a status, a reason and the quoted evidence.

* :mod:`.taxonomy` -- the statuses, their definitions and their precedence;
* :mod:`.tracing` -- where a gold argument value comes from (dialogue, tool result, documentation,
  derivation);
* :mod:`.checks` -- the machine checks, each a named function over all test rows;
* :mod:`.build` -- checks plus hand-written decisions (``apibank/data/audit/decisions.jsonl``) into
  ``apibank/data/audit/audit.jsonl`` and ``AUDIT.json``; ``python -m apibank.audit build`` writes them.
"""
