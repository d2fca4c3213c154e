"""Tasks inspect-ai finds through the ``inspect_ai`` entry point of the package."""

from apibank.evals.agentic import apibank_agentic  # noqa: F401
