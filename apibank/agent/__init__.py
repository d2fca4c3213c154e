"""Agentic API-Bank: the model drives the tool loop in a per-episode environment and is judged on what it
achieved (final state, obtained information), with trials, pass^k and pass@k. See README "Agentic episodes"."""
