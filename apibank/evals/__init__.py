"""API-Bank as inspect-ai tasks (registered through the ``inspect_ai`` entry point, see ``_registry``).
Needs the ``inspect`` extra (``pip install 'apibank[inspect]'``).

* :mod:`.spec` -- the registry names of the solvers and scorers, and the field spec mapping rows to samples;
* :mod:`.classic` -- the classic per-step tasks of levels 1-3 with the paper prompts, both protocols;
* :mod:`.agentic` -- agentic episodes: the model drives the tool loop, judged on what it achieved.

    inspect eval apibank/api_bank --model mockllm/model -T level=1 -T data_dir=../shared/apibank-upstream \
        --log-dir out/inspect-logs
    inspect eval apibank/apibank_agentic --model mockllm/model -T level=level-3 -T data_dir=../shared/apibank-upstream \
        --log-dir out/inspect-logs
"""

from apibank.errors import require_extra

require_extra("inspect", ("inspect_ai",), "API-Bank's inspect-ai tasks")
