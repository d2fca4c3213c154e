"""API-Bank as inspect-ai tasks (registered through the ``inspect_ai`` entry point, see ``_registry``).

* :mod:`.spec` -- the field spec, solvers and scorers the dataset's ``eval.yaml`` declares (no inspect-ai import);
* :mod:`.classic` -- the classic per-step tasks of levels 1-3 with the paper prompts, both protocols.

    inspect eval apibank/api_bank --model mockllm/model -T level=1 -T data_dir=../shared/apibank-upstream
"""
