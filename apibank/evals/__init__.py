"""API-Bank inside evaluation harnesses, every sample judged by the package's own judge
(:mod:`.samples`, which needs no harness).

* inspect-ai (the ``inspect`` extra; registered through the ``inspect_ai`` entry point, see ``_registry``):
  :mod:`.spec` (registry names, the field spec), :mod:`.classic` (levels 1-3 with the paper prompts,
  both protocols), :mod:`.agentic` (agentic episodes judged on what they achieved);

      inspect eval apibank/api_bank --model mockllm/model -T level=1 -T data_dir=../shared/apibank-upstream \
          --log-dir out/inspect-logs

* lm-evaluation-harness (the ``lm-eval`` extra): :mod:`.lm_eval`, tasks ``apibank_level1..3`` and the
  group ``apibank``;

      lm_eval run --model hf --model_args pretrained=MODEL --tasks apibank_level1 \
          --include_path "$(python -m apibank.evals.lm_eval)" --log_samples --output_path out/lm-eval

* lighteval (the ``lighteval`` extra): :mod:`.lighteval`, a custom-tasks module.

Each module checks its harness when imported (one line naming the extra when it is missing).
"""
