"""vLLM's offline engine (extra ``vllm``; imported lazily, needs a GPU)."""

from __future__ import annotations

import itertools
from typing import Any

from apibank.errors import require_extra
from apibank.generate.backends.base import Backend, Completion, DecodingSettings
from apibank.generate.backends.hf import _HFRendering, template_sha256
from apibank.generate.stops import answer_start

_BATCHES = itertools.count()  # request ids unique within the process: apibank-<batch>-<row>-<stop|free>

# ----------------------------------------------------------------------------------------- vLLM
class VLLMBackend(_HFRendering, Backend):
    """vLLM's offline engine. ``pip install 'apibank[vllm]'``; needs a GPU.

    Prompts are rendered with the model's HF tokenizer exactly as for the transformers backend and
    sent as token ids, so both backends see identical inputs. Prefix caching is on (rows of one
    dialogue share their history), each row gets its own token budget and is reported as soon as it
    finishes, and stop strings follow the shared rule of :func:`~apibank.generate.stops.first_stop`
    (see ``generate``).
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        trust_remote_code: bool = False,
        chat_template: str = "auto",
        engine_kwargs: dict[str, Any] | None = None,
        enable_prefix_caching: bool = True,
    ) -> None:
        require_extra("vllm", ("vllm",), "the vllm backend")
        from vllm import LLM

        self.model_id = model
        self.revision = revision
        self.dtype = dtype
        self.chat_template = chat_template
        self.tensor_parallel_size = tensor_parallel_size
        self.enable_prefix_caching = enable_prefix_caching
        self.llm = LLM(
            model=model,
            revision=revision,
            tokenizer_revision=revision,
            dtype=dtype,
            tensor_parallel_size=tensor_parallel_size,
            trust_remote_code=trust_remote_code,
            seed=0,
            **{"enable_prefix_caching": enable_prefix_caching, **(engine_kwargs or {})},
        )
        self.tokenizer = self.llm.get_tokenizer()

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_id": self.model_id,
            "model_revision": self.revision,
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "chat_template": self.chat_template,
            "chat_template_sha256": template_sha256(self.tokenizer),
            "prefix_caching": self.enable_prefix_caching,
        }

    def token_counts(self, texts):
        return [len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]

    def _params(self, budget: int, stop: list[str] | None, settings: DecodingSettings):
        from vllm import SamplingParams

        sampling = {"temperature": 0.0}
        if settings.sampling:
            sampling = {"temperature": settings.temperature, "seed": settings.seed}
        return SamplingParams(**sampling, max_tokens=budget, stop=stop, skip_special_tokens=False)

    def generate(self, conversations, prompts, settings, on_completion=None):
        """The rows go to vLLM's engine together and are stepped as its own ``LLM.generate`` steps them
        (``add_request``, then ``step`` until done), so that each row is reported as soon as it finishes."""
        if not conversations:
            return []
        add_special = self._add_special_tokens(conversations[0])
        inputs = [
            {"prompt_token_ids": self.tokenizer(prompt, add_special_tokens=add_special)["input_ids"]}
            for prompt in prompts
        ]
        budgets = [settings.max_tokens_for(c.level, c.kind) for c in conversations]
        stops = list(settings.stop) or None
        engine = self.llm.llm_engine
        batch = next(_BATCHES)
        running: dict[str, tuple[int, bool]] = {}  # request id -> (row, whether it has the stop strings)

        def submit(index: int, stop: list[str] | None) -> None:
            request_id = f"apibank-{batch}-{index}-{'stop' if stop else 'free'}"
            engine.add_request(request_id, inputs[index], self._params(budgets[index], stop, settings))
            running[request_id] = (index, bool(stop))

        completions: dict[int, Completion] = {}
        try:
            for index in range(len(inputs)):
                submit(index, stops)
            while running:
                if not engine.has_unfinished_requests():
                    raise RuntimeError(f"vLLM's engine dropped the requests {sorted(running)}")
                for output in engine.step():
                    if not output.finished or output.request_id not in running:
                        continue
                    index, stopped = running.pop(output.request_id)
                    generated = output.outputs[0]
                    # vLLM also stops at a stop string inside the answer's leading whitespace or right after
                    # its opening turn label ("\nAI:", "AI:\n"); the shared rule does not, so such a row runs
                    # again without stop strings and the runner cuts it like every other backend's text.
                    if (stopped and getattr(generated, "finish_reason", None) == "stop"
                            and answer_start(generated.text) == len(generated.text)):
                        submit(index, None)
                        continue
                    completions[index] = self._completion(conversations[index], prompts[index], inputs[index],
                                                          generated)
                    if on_completion is not None:
                        on_completion(index, completions[index])
        except BaseException:
            if running:
                engine.abort_request(list(running))
            raise
        return [completions[index] for index in range(len(conversations))]

    def _completion(self, conversation, prompt: str, given: dict[str, Any], generated) -> Completion:
        raw = generated.text
        text = self.tokenizer.decode(list(generated.token_ids), skip_special_tokens=True)
        return Completion(text=text, raw=raw, tool_calls=self._parse_tool_calls(raw, prompt, conversation),
                          prompt_tokens=len(given["prompt_token_ids"]), generated_tokens=len(generated.token_ids))
