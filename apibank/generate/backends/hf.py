"""Backends that hold a Hugging Face tokenizer: the rendering they share, and transformers (batched, left padding)."""

from __future__ import annotations

from typing import Any

from apibank.generate.backends.base import Backend, Completion
from apibank.generate.conversation import Conversation
from apibank.generate.toolcalls import ToolCall, calls_from_message, calls_in_text


# ------------------------------------------------------------------------------ HF tokenizer use
class _HFRendering:
    """Prompt rendering and tool-call parsing shared by the backends that hold a HF tokenizer."""

    tokenizer: Any
    chat_template: str  # "auto", "on" or "off"

    def _uses_template(self, conversation: Conversation) -> bool:
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if conversation.format == "paper":
            return has_template and self.chat_template != "off"
        if not has_template:
            raise ValueError(
                f"the {conversation.format!r} format needs a chat template, and this tokenizer has none; "
                "use --format paper"
            )
        return True

    def render(self, conversation: Conversation) -> str:
        if not self._uses_template(conversation):
            return conversation.plain_text or ""
        try:
            return self.tokenizer.apply_chat_template(
                conversation.messages, tools=conversation.tools, add_generation_prompt=True, tokenize=False
            )
        except Exception as error:  # jinja raises its own errors, e.g. for a role the template rejects
            if not any(m["role"] == "tool" for m in conversation.messages):
                raise
            # Templates without a tool role: show each result as a user turn instead.
            messages = [
                {"role": "user", "content": f"API-Response: {m['content']}"} if m["role"] == "tool" else m
                for m in conversation.messages
            ]
            try:
                return self.tokenizer.apply_chat_template(
                    messages, tools=conversation.tools, add_generation_prompt=True, tokenize=False
                )
            except Exception:
                raise error

    def _add_special_tokens(self, conversation: Conversation) -> bool:
        # A chat template writes BOS itself; a plain paper prompt gets the tokenizer's usual tokens.
        return not self._uses_template(conversation)

    def _parse_tool_calls(self, raw: str, prompt: str, conversation: Conversation) -> list[ToolCall] | None:
        if conversation.format != "tools":
            return None
        if getattr(self.tokenizer, "response_template", None) is not None:
            try:
                message = self.tokenizer.parse_response(raw, prefix=prompt, tools=conversation.tools)
                calls = calls_from_message(message.get("tool_calls"))
                if calls:
                    return calls
            except Exception:  # a template-specific parser failing on odd output: fall back to JSON scan
                pass
        return calls_in_text(raw)


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
class TransformersBackend(_HFRendering, Backend):
    name = "transformers"

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
        model_kwargs: dict[str, Any] | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model_id = model
        self.revision = revision
        self.chat_template = chat_template
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        kwargs = dict(model_kwargs or {})
        kwargs["dtype"] = _torch_dtype(dtype)
        if device_map is not None:
            kwargs["device_map"] = device_map
        self.model = AutoModelForCausalLM.from_pretrained(
            model, revision=revision, trust_remote_code=trust_remote_code, **kwargs
        )
        if device_map is None:
            self.model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model.eval()
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        self.eos_ids = sorted(eos_ids)

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_id": self.model_id,
            "model_revision": self.revision or getattr(self.model.config, "_commit_hash", None),
            "dtype": str(self.model.dtype).removeprefix("torch."),
            "device": str(self.model.device),
            "chat_template": self.chat_template,
        }

    def _trim(self, ids: list[int]) -> list[int]:
        for index, token in enumerate(ids):
            if token in self.eos_ids:
                ids = ids[:index]
                break
        pad = self.tokenizer.pad_token_id
        while ids and ids[-1] == pad:
            ids = ids[:-1]
        return ids

    def generate(self, conversations, prompts, settings):
        import torch

        if not conversations:
            return []
        add_special = self._add_special_tokens(conversations[0])
        encoded = self.tokenizer(
            list(prompts), return_tensors="pt", padding=True, add_special_tokens=add_special
        ).to(self.model.device)
        stop_kwargs: dict[str, Any] = {}
        if settings.stop:
            stop_kwargs = {"stop_strings": list(settings.stop), "tokenizer": self.tokenizer}
        with torch.inference_mode():
            output = self.model.generate(
                **encoded,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                max_new_tokens=settings.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.eos_ids or None,
                **stop_kwargs,
            )
        new_tokens = output[:, encoded["input_ids"].shape[1] :].tolist()
        completions = []
        for conversation, prompt, ids in zip(conversations, prompts, new_tokens):
            ids = self._trim(ids)
            raw = self.tokenizer.decode(ids, skip_special_tokens=False)
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            calls = self._parse_tool_calls(raw, prompt, conversation)
            completions.append(Completion(text=text, raw=raw, tool_calls=calls, extra={"new_tokens": len(ids)}))
        return completions
