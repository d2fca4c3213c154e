"""Backends that hold a Hugging Face tokenizer: the rendering they share, and transformers (batched, left padding)."""

from __future__ import annotations

from typing import Any, Sequence

from apibank.benchmark import TEMPLATE_MODES
from apibank.errors import require_extra
from apibank.generate.backends.base import Backend, Completion, tokenizer_token_counts
from apibank.generate.backends.choice import require_torchvision
from apibank.generate.backends.model_checks import check_hf_model, read_chat_template
from apibank.generate.backends.options import (CHAT_TEMPLATE, CHAT_TEMPLATE_KWARGS, DTYPE, RESPONSE_TEMPLATE,
                                                REVISION, TOOL_PARSER, TRUST_REMOTE_CODE, Option)
from apibank.generate.conversation import Conversation
from apibank.generate.stops import TURN_END_MARKERS, StopWatch
from apibank.generate.templates import TemplateAdapter, TemplateRefusal
from apibank.generate.templates.probes import call_probe_tools
from apibank.generate.templates.readback import check_calls_read, reader_label
from apibank.generate.toolcalls import ParserChoice, ToolCall


# ------------------------------------------------------------------------------ HF tokenizer use


class _HFRendering:
    """Prompt rendering and tool-call parsing shared by the backends that hold a HF tokenizer.

    ``chat_template`` is "auto", "on", "off" (whether the paper format goes through the tokenizer's
    template) or the path of a Jinja template file that replaces the tokenizer's own (then used for
    every format). Chat-format conversations are adapted to what the template accepts
    (:mod:`apibank.generate.templates`); the adaptations made are in :meth:`template_info`.
    """

    tokenizer: Any
    chat_template: str  # "auto", "on", "off" or a template file
    chat_template_kwargs: dict[str, Any] | None = None  # passed to the template (enable_thinking, ...)
    tool_parser: str | None = None  # a reader's name (--tool-parser); None: chosen from the template
    response_template: str | None = None  # a response template file (--response-template)

    def parser_choice(self) -> ParserChoice:
        """The call reader: a response template or reader given, else the model's own response template and
        the reader the chat template's markers select, else per output (:class:`ParserChoice`)."""
        choice = getattr(self, "_parser_choice", None)
        if choice is None:
            self._adapter()  # installs a --chat-template file first
            template = getattr(self.tokenizer, "chat_template", None)
            own = getattr(self.tokenizer, "response_template", None)
            choice = ParserChoice.make(self.tool_parser, template if isinstance(template, str) else None,
                                       response_template=self.response_template,
                                       model_template=own if isinstance(own, dict) else None)
            self._parser_choice = choice
        return choice

    def _template_file(self) -> str | None:
        mode = getattr(self, "chat_template", "auto") or "auto"
        return None if mode in TEMPLATE_MODES else mode

    def _adapter(self) -> TemplateAdapter:
        adapter = getattr(self, "_template_adapter", None)
        if adapter is None:
            template_file = self._template_file()
            if template_file is not None:
                self.tokenizer.chat_template = read_chat_template(template_file)
            text = getattr(self.tokenizer, "chat_template", None)

            extra = dict(self.chat_template_kwargs or {})

            def render_fn(messages, tools):
                return self.tokenizer.apply_chat_template(
                    messages, tools=tools, add_generation_prompt=True, tokenize=False, **extra
                )

            adapter = TemplateAdapter(render_fn, text if isinstance(text, str) else None)
            self._template_adapter = adapter
        return adapter

    def _uses_template(self, conversation: Conversation) -> bool:
        self._adapter()  # installs a --chat-template file first
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if conversation.format == "paper":
            if self._template_file() is not None:
                return True
            if self.chat_template == "on" and not has_template:
                raise TemplateRefusal(
                    "--chat-template on: the tokenizer has no chat template; give one with --chat-template FILE"
                )
            return has_template and self.chat_template != "off"
        if not has_template:
            raise TemplateRefusal(
                f"the {conversation.format!r} format needs a chat template, and this tokenizer has none; "
                "give one with --chat-template FILE, or use --format paper"
            )
        return True

    @property
    def last_adaptations(self) -> list[str]:
        """The adaptations of the conversation rendered last (``--prompts-only`` records them per row)."""
        return list(self._last_adaptations)

    _last_adaptations: tuple[str, ...] = ()

    def render(self, conversation: Conversation) -> str:
        self._last_adaptations = ()
        if not self._uses_template(conversation):
            return conversation.plain_text or ""
        text = self._adapter().render(
            conversation.messages, conversation.tools, fmt=conversation.format, row_id=conversation.row_id
        )
        self._last_adaptations = self._adapter().last_names
        return text

    def template_info(self) -> dict[str, Any]:
        """The template actually used, the options given to it and every adaptation it needed (for results.json)."""
        adapter = getattr(self, "_template_adapter", None)
        return {
            "chat_template_file": self._template_file(),
            "chat_template_sha256": adapter.template_sha256 if adapter else None,
            "chat_template_kwargs": dict(self.chat_template_kwargs or {}),
            "template_adaptations": adapter.adaptations if adapter else [],
            "tool_parser": self.parser_choice().as_dict(),
            **({"calls_read_back": self._calls_read} if getattr(self, "_calls_read", None) else {}),
        }

    def thinking(self, fmt: str) -> str | None:
        """Why the model thinks before answering with this template (None: it does not), from the
        template and its options (:meth:`TemplateAdapter.thinking`)."""
        if fmt == "paper" and not self._uses_template(Conversation("probe", 0, "api", "paper", [])):
            return None
        if not getattr(self.tokenizer, "chat_template", None) and self._template_file() is None:
            return None
        return self._adapter().thinking()

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return tokenizer_token_counts(self.tokenizer, texts)

    def _add_special_tokens(self, conversation: Conversation) -> bool:
        # A chat template writes BOS itself; a plain paper prompt gets the tokenizer's usual tokens.
        return not self._uses_template(conversation)

    def _parse_tool_calls(self, raw: str, prompt: str, conversation: Conversation) -> list[ToolCall] | None:
        if conversation.format != "tools":
            return None
        return self._read_calls(raw, prompt, conversation.tools)

    def _read_calls(self, raw: str, prompt: str, tools: list[dict[str, Any]] | None) -> list[ToolCall]:
        """The calls in one raw output, as the run reads them (the model's own response template first)."""
        return self.parser_choice().read(raw, tools, prompt=prompt)

    def check_calls_read(self) -> dict[str, Any]:
        """The calls the chat template writes, read back with this run's reader
        (:func:`~apibank.generate.templates.readback.check_calls_read`): the record for results.json, or
        :class:`~apibank.generate.templates.readback.CallsUnread` before any row is generated."""
        record = getattr(self, "_calls_read", None)
        if record is None:
            tools = call_probe_tools()
            eos = getattr(self.tokenizer, "eos_token", None)
            record = check_calls_read(
                self._adapter(), lambda text, prompt: self._read_calls(text, prompt, tools),
                reader=reader_label(self.parser_choice().as_dict()),
                end_markers=(*TURN_END_MARKERS, *([eos] if isinstance(eos, str) else [])))
            self._calls_read = record
        return record


class TokenizerRendering(_HFRendering):
    """The prompts of a backend that holds a HF tokenizer, from the tokenizer alone (no weights load)."""

    def __init__(self, model: str, *, revision: str | None = None, trust_remote_code: bool = False,
                 chat_template: str = "auto", chat_template_kwargs: dict[str, Any] | None = None,
                 tool_parser: str | None = None, **_engine_options: Any) -> None:
        from apibank.generate.backends.loading import load_tokenizer, resolve_model

        self.source = resolve_model(model)
        self.tokenizer = load_tokenizer(self.source, revision=revision, trust_remote_code=trust_remote_code)
        self.chat_template = chat_template
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.tool_parser = tool_parser

    @classmethod
    def around(cls, tokenizer: Any, *, chat_template: str = "auto",
               chat_template_kwargs: dict[str, Any] | None = None) -> "TokenizerRendering":
        """A renderer around a tokenizer already loaded (its ``chat_template`` is replaced by a FILE given)."""
        renderer = cls.__new__(cls)
        renderer.tokenizer, renderer.chat_template = tokenizer, chat_template
        renderer.chat_template_kwargs = dict(chat_template_kwargs or {})
        return renderer


def _torch_dtype(dtype: str):
    import torch

    if dtype == "auto":
        return "auto"
    try:
        value = getattr(torch, dtype)
    except AttributeError:
        raise ValueError(f"unknown dtype {dtype!r}") from None
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return value


# ------------------------------------------------------------------------------- transformers
def template_sha256(tokenizer) -> str | None:
    """SHA-256 of the chat template the tokenizer renders with (None without one)."""
    import hashlib

    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates: hash them all, in name order
        template = "\n".join(f"{name}\n{text}" for name, text in sorted(template.items()))
    return hashlib.sha256(template.encode()).hexdigest() if isinstance(template, str) and template else None


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


class TransformersBackend(_HFRendering, Backend):
    """``AutoModelForCausalLM`` from a Hub id, a local folder or a local ``.gguf`` file. Every decoder stops
    each row on its own (the stop rule on the generated text only, its own token budget, EOS):

    * on a CPU, :class:`~apibank.generate.decoders.decoding.GreedyDecoder` (prompts sharing a prefix
      prefilled together over its cache, a prefix shared with the previous call's prompt reused), where
      the library's continuous batching is slower;
    * elsewhere, transformers' continuous batching
      (:class:`~apibank.generate.decoders.continuous.ContinuousDecoder`);
    * with ``compile=True`` (a CUDA GPU only), :class:`~apibank.generate.decoders.compiled.CompiledDecoder`
      (static cache, CUDA graphs).

    On a CPU, torch's thread count is set before each batch to the cores that other processes leave free
    (:class:`~apibank.generate.backends.loading.CpuThreads`; ``threads`` fixes it) and recorded in :meth:`info`."""

    name = "transformers"
    options = (
        REVISION, DTYPE,
        Option("device", "device, e.g. cpu, cuda:1 (default: cuda if available)"),
        Option("device_map", "e.g. 'auto' to spread a model over GPUs"),
        TRUST_REMOTE_CODE, CHAT_TEMPLATE, CHAT_TEMPLATE_KWARGS, TOOL_PARSER, RESPONSE_TEMPLATE,
        Option("compile", "on a CUDA GPU: static KV cache and CUDA graphs (torch.compile), greedy only; "
               "compile time is reported apart in usage", kind="switch", default=False),
        Option("threads", "on a CPU: a fixed torch thread count (default: set before each batch to the cores "
               "that other processes leave free; OMP_NUM_THREADS also fixes it)", type=int, minimum=1,
               metavar="N"),
    )

    @classmethod
    def check_options(cls, model: str, options: dict[str, Any], *, fmt: str | None = None) -> None:
        if not model.lower().endswith(".gguf"):  # a .gguf one: the gguf extra, torch included
            require_extra("torch", ("torch",), f"--backend {cls.name}")
        require_torchvision(f"--backend {cls.name}")  # transformers imports it to load any model
        if options.get("compile"):
            from apibank.generate.decoders.compiled import check_compile_device

            check_compile_device(options.get("device") or ("cuda" if _cuda_available() else "cpu"))
        check_hf_model(model, options, fmt)

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        device: str | None = None,
        device_map: str | dict | None = None,
        trust_remote_code: bool = False,
        chat_template: str = "auto",
        tool_parser: str | None = None,
        response_template: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        model_kwargs: dict[str, Any] | None = None,
        threads: int | None = None,
        reuse_prefix: bool = True,
        compile: bool = False,
    ) -> None:
        import torch

        from apibank.generate.backends.loading import CpuThreads, load_tokenizer_and_model, resolve_model

        if compile:  # refused before the model loads
            from apibank.generate.decoders.compiled import check_compile_device

            check_compile_device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.compile = compile
        self.cpu_threads = CpuThreads(threads)
        self.source = resolve_model(model)
        self.model_id = model
        self.revision = revision
        self.chat_template = chat_template
        self.tool_parser = tool_parser
        self.response_template = response_template
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        kwargs = dict(model_kwargs or {})
        kwargs["dtype"] = _torch_dtype(dtype)
        if device_map is not None:
            kwargs["device_map"] = device_map
        self.tokenizer, self.model = load_tokenizer_and_model(
            self.source, revision=revision, trust_remote_code=trust_remote_code, model_kwargs=kwargs
        )
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        if device_map is None:
            self.model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model.eval()
        if self.model.device.type == "cpu":
            torch.set_num_threads(self.cpu_threads.initial())
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        self.eos_ids = sorted(eos_ids)
        if compile:
            from apibank.generate.decoders.compiled import CompiledDecoder, check_compile_device

            check_compile_device(str(self.model.device))
            self.decoder = CompiledDecoder(self.model, eos_ids=self.eos_ids, pad_id=self.tokenizer.pad_token_id or 0)
        elif self.model.device.type == "cpu":
            from apibank.generate.decoders.decoding import GreedyDecoder

            self.decoder = GreedyDecoder(self.model, eos_ids=self.eos_ids, reuse_prefix=reuse_prefix)
        else:
            from apibank.generate.decoders.continuous import ContinuousDecoder

            self.decoder = ContinuousDecoder(self.model, eos_ids=self.eos_ids)

    @classmethod
    def prompt_renderer(cls, model: str, **options: Any) -> TokenizerRendering:
        return TokenizerRendering(model, **options)

    def info(self) -> dict[str, Any]:
        import torch

        from apibank.generate.backends.loading import source_info

        revision = self.revision or getattr(self.model.config, "_commit_hash", None)
        if self.source.kind == "gguf":
            revision = f"sha256:{self.source.sha256}"
        return {
            "backend": self.name,
            "model_id": self.model_id,
            "model_revision": revision,
            "model_source": self.source.kind,
            **source_info(self.source),
            "dtype": str(self.model.dtype).removeprefix("torch."),
            "device": str(self.model.device),
            "chat_template": self.chat_template,
            "chat_template_sha256": template_sha256(self.tokenizer),
            **({"chat_template_kwargs": self.chat_template_kwargs} if self.chat_template_kwargs else {}),
            "decoder": type(self.decoder).__name__,
            **({"linear_products": self.decoder.linear_products, "packed_prefill": self.decoder.packs_prompts}
               if hasattr(self.decoder, "linear_products") else {}),
            "torch_threads": torch.get_num_threads(),
            **(self.cpu_threads.info() if self.model.device.type == "cpu" else {}),
            **({"compile": True, "compile_seconds": round(self.decoder.compile_seconds, 3)} if self.compile else {}),
        }

    def end_answers_at(self, tokens: Sequence[str]) -> list[str]:
        """Also end every answer at these tokens (a chat template's end-of-turn marker that the model's EOS
        list lacks, as for a base model given a template); returns those in the vocabulary."""
        vocab = self.tokenizer.get_vocab()
        found = [token for token in tokens if token in vocab]
        self.eos_ids = sorted(set(self.eos_ids) | {vocab[token] for token in found})
        self.decoder.eos_ids = set(self.eos_ids)
        return found

    def _trim(self, ids: list[int]) -> list[int]:
        for index, token in enumerate(ids):
            if token in self.eos_ids:
                ids = ids[:index]
                break
        pad = self.tokenizer.pad_token_id
        while ids and ids[-1] == pad:
            ids = ids[:-1]
        return ids

    def _completion(self, conversation: Conversation, prompt: str, row) -> Completion:
        """The completion of one decoded row (a :class:`~apibank.generate.decoders.decoding.RowOutput`)."""
        ids = self._trim(row.ids)
        raw = self.tokenizer.decode(ids, skip_special_tokens=False)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Completion(
            text=text, raw=raw, tool_calls=self._parse_tool_calls(raw, prompt, conversation),
            extra={"new_tokens": len(row.ids), "finish_reason": row.finish_reason,
                   "reused_prompt_tokens": row.reused_prompt_tokens},
            prompt_tokens=row.prompt_tokens, generated_tokens=len(row.ids) + (row.finish_reason == "eos"),
            seconds=row.seconds,
        )

    def generate(self, conversations, prompts, settings, on_completion=None):
        if not conversations:
            return []
        if self.model.device.type == "cpu":
            self.cpu_threads.adjust()
        add_special = self._add_special_tokens(conversations[0])
        encoded = [self.tokenizer(prompt, add_special_tokens=add_special)["input_ids"] for prompt in prompts]
        budgets = [settings.max_tokens_for(c.level, c.kind) for c in conversations]
        stops = tuple(settings.stop)
        watches: dict[int, StopWatch] = {}

        def decode(ids) -> str:
            return self.tokenizer.decode(ids, skip_special_tokens=True)

        def should_stop(row: int, ids: list[int]) -> bool:
            if not stops:
                return False
            watch = watches.get(row)
            if watch is None:
                watch = watches[row] = StopWatch(stops, decode)
            return watch(ids)

        done: dict[int, Completion] = {}

        def on_row(row: int, output) -> None:  # a row that ended: reported now, before the batch ends
            done[row] = self._completion(conversations[row], prompts[row], output)
            on_completion(row, done[row])

        try:
            rows = self.decoder.generate(encoded, budgets, should_stop, temperature=settings.temperature,
                                         seed=settings.seed, on_row=on_row if on_completion is not None else None)
        finally:
            if self.model.device.type == "cpu":
                self.cpu_threads.batch_ended()
        return [done.get(index) or self._completion(conversation, prompt, row)
                for index, (conversation, prompt, row) in enumerate(zip(conversations, prompts, rows))]
