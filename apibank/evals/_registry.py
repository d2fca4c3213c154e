# What inspect-ai's ``inspect_ai`` entry point loads (setup.cfg): importing a module registers its
# tasks, solvers, scorers and metrics under the ``apibank/`` namespace. Keep this a plain list of imports.
from apibank.evals.agentic import apibank_agentic  # noqa: F401
from apibank.evals.classic import api_bank, api_bank_metrics, api_bank_scorer, paper_prompt  # noqa: F401
