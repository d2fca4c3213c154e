"""Presenting scores: the paper-layout table (:mod:`.table`) and the Markdown report with plots (:mod:`.markdown`)."""
