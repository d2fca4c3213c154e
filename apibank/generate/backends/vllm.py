"""vLLM's offline engine (extra ``vllm``; imported lazily, needs a GPU)."""

from __future__ import annotations

from typing import Any

from apibank.generate.backends.base import Backend, Completion
from apibank.generate.backends.hf import _HFRendering


# ----------------------------------------------------------------------------------------- vLLM
class VLLMBackend(_HFRendering, Backend):
    """vLLM's offline engine. ``pip install 'apibank[vllm]'``; needs a GPU.

    Prompts are rendered with the model's HF tokenizer exactly as for the transformers backend and
    sent as token ids, so both backends see identical inputs.
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
    ) -> None:
        try:
            from vllm import LLM
        except ImportError as error:
            raise RuntimeError("the vllm backend needs vLLM: pip install 'apibank[vllm]'") from error
        self.model_id = model
        self.revision = revision
        self.dtype = dtype
        self.chat_template = chat_template
        self.tensor_parallel_size = tensor_parallel_size
        self.llm = LLM(
            model=model,
            revision=revision,
            tokenizer_revision=revision,
            dtype=dtype,
            tensor_parallel_size=tensor_parallel_size,
            trust_remote_code=trust_remote_code,
            seed=0,
            **(engine_kwargs or {}),
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
        }

    def generate(self, conversations, prompts, settings):
        from vllm import SamplingParams

        if not conversations:
            return []
        add_special = self._add_special_tokens(conversations[0])
        inputs = [
            {"prompt_token_ids": self.tokenizer(prompt, add_special_tokens=add_special)["input_ids"]}
            for prompt in prompts
        ]
        params = SamplingParams(
            temperature=0.0,
            max_tokens=settings.max_new_tokens,
            stop=list(settings.stop) or None,
            skip_special_tokens=False,
        )
        outputs = self.llm.generate(inputs, params, use_tqdm=False)
        completions = []
        for conversation, prompt, output in zip(conversations, prompts, outputs):
            generated = output.outputs[0]
            raw = generated.text
            text = self.tokenizer.decode(list(generated.token_ids), skip_special_tokens=True)
            calls = self._parse_tool_calls(raw, prompt, conversation)
            completions.append(Completion(text=text, raw=raw, tool_calls=calls))
        return completions
