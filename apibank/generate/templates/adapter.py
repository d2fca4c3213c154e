"""The adapter: probes a chat template once per format, then renders every conversation adapted to it."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Sequence

from apibank.generate.templates.adaptations import (
    ORDER,
    Adaptation,
    Message,
    RenderFn,
    TemplateRefusal,
    Tools,
    adapt,
    candidate_sets,
    shape_of,
)
from apibank.generate.templates.completeness import missing_pieces
from apibank.generate.templates.probes import (
    FORMAT_PROBES,
    PROBES,
    USER_TEXT,
    USER_TURN,
    probe_schema,
)
from apibank.generate.toolcalls.reasoning import (
    BLOCKS,
    MODE_VARIABLE,
    THINKING_CLOSERS,
    THINKING_OPENERS,
    THINKING_SWITCHES,
)


def _error_text(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text if len(text) <= 300 else text[:300] + "..."


# What says that a generation prompt leaves the model thinking first, or that it closed an empty thought,
# and what switches a template's thinking mode: every vLLM reasoning parser's markers (reasoning_markers.json).
_OPEN_THINKING = THINKING_OPENERS
_CLOSED_THINKING = THINKING_CLOSERS
_THINKING_SWITCHES = THINKING_SWITCHES


class TemplateAdapter:
    """Renders conversations through ``render_fn`` (a chat template), adapted to what it accepts.

    ``render_fn(messages, tools)`` returns the prompt text or raises when the template refuses.
    """

    def __init__(self, render_fn: RenderFn, template_text: str | None = None) -> None:
        self._render_fn = render_fn
        self.template_text = template_text
        self.template_sha256 = hashlib.sha256(template_text.encode()).hexdigest() if template_text else None
        self._probed: set[str] = set()
        self._decided: dict[str, Adaptation] = {}
        self._by_shape: dict[tuple, tuple[str, ...]] = {}
        self.last_names: tuple[str, ...] = ()  # the adaptations of the conversation rendered last
        self._escalated: set[str] = set()  # adaptations first needed by a row, not by a probe

    # -- probing
    def _try(self, messages: list[Message], tools: Tools, must_show: Sequence[str],
             must_not_show: Sequence[str] = ()) -> str | None:
        """None if the template renders ``messages`` with every ``must_show`` string, else why not."""
        try:
            text = self._render_fn(messages, tools)
        except Exception as error:  # a template's raise_exception, or any error inside its code
            return f"the template raises: {_error_text(error)}"
        if any(marker not in text for marker in must_show):
            return "the template drops it silently (probe text missing from the prompt)"
        if any(marker in text for marker in must_not_show):
            return "the template prints the arguments in Python's notation"
        return None

    def probe(self, fmt: str) -> None:
        """Decide, once per template and format, which adaptations the format's conversations need."""
        if fmt in self._probed:
            return
        tools = [probe_schema()] if fmt == "tools" else None  # a template may refuse tools=None (Hermes tool_use)
        baseline = f"baseline-{fmt}"
        if baseline not in self._probed:
            for attempt in ((), ("tools-in-prompt",)) if tools else ((),):
                messages, adapted_tools = adapt([USER_TURN], tools, attempt)
                why = self._try(messages, adapted_tools, (USER_TEXT,))
                if why is None:
                    break
            if why is not None:
                raise TemplateRefusal(f"the chat template cannot render a single user message: {why}")
            self._probed.add(baseline)
        for name in FORMAT_PROBES[fmt]:
            probe = PROBES[name]
            decided = tuple(self._decided)
            first_why = None
            for candidate in probe.candidates:
                if all(adaptation in decided for adaptation in candidate) and candidate:
                    continue  # already tried as the decided set
                messages, adapted_tools = adapt(probe.messages, tools, (*decided, *candidate))
                why = self._try(messages, adapted_tools, probe.must_show, probe.must_not_show)
                first_why = first_why or why
                if why is None:
                    for adaptation in candidate:
                        self._decided.setdefault(adaptation, Adaptation(adaptation, first_why or ""))
                    break
            # No candidate renders this probe: rows of its shape are adapted (or refused) as they come.
        self._probed.add(fmt)

    def thinking(self) -> str | None:
        """Why a model given this template thinks before it answers, or None when it does not: the
        generation prompt opens a thinking block, switches thinking on (``<|think|>``, ``/think``), or the
        template has a thinking mode that the prompt leaves on (Qwen3's ``enable_thinking``, GPT-OSS's
        analysis channel); the default prompt shows the model its reasoning block (Ministral 3 Reasoning's
        system message); or the template keeps earlier turns' reasoning and has no variable to select a
        thinking mode (Kimi-K2-Thinking: the model always thinks). A prompt that closes an empty
        thinking block turns it off. A model that thinks although its template shows no trace of it (MiMo-VL)
        is not seen: pass ``--thinking-budget``."""
        try:
            prompt = self._render_fn([dict(USER_TURN)], None)
        except Exception:
            return None
        tail = prompt.rstrip()
        text = self.template_text or ""
        if tail.endswith(_CLOSED_THINKING):
            return None
        if tail.endswith(_OPEN_THINKING):
            return "the generation prompt opens a thinking block"
        if "<|think|>" in prompt or re.search(r"(?<!no_)/think\b", prompt.replace(USER_TEXT, "")):
            return "the prompt switches thinking on"
        if "<|channel|>" in text:
            return "harmony format: the model writes its analysis channel before the answer"
        if any(opener in text for opener in _OPEN_THINKING) and any(switch in text for switch in _THINKING_SWITCHES):
            return "the template thinks unless its thinking switch turns it off (enable_thinking, thinking_budget)"
        shown = prompt.replace(USER_TEXT, "")
        if any(block.opener_re.search(shown) and block.closer_re.search(shown) for block in BLOCKS if not block.shared_closer):
            return "the default prompt tells the model to think in its reasoning block first"
        if (any(closer in text for closer in _CLOSED_THINKING) or "reasoning_content" in text) and not MODE_VARIABLE.search(text):
            return "the template keeps earlier turns' reasoning and has no switch to turn thinking off"
        return None

    def _probed_names(self) -> tuple[str, ...]:
        """The adaptations the probes decided (those a row's shape needed on top apply to that shape only)."""
        return tuple(name for name in self._decided if name not in self._escalated)

    def _whole(self, messages: Sequence[Message], tools: Tools, names: Sequence[str]) -> tuple[str | None, str]:
        """``(prompt, "")`` when the conversation adapted by ``names`` renders whole, else ``(None, why not)``."""
        adapted, adapted_tools = adapt(messages, tools, names)
        try:
            text = self._render_fn(adapted, adapted_tools)
        except Exception as error:
            return None, f"the template raises: {_error_text(error)}"
        lost = missing_pieces(messages, tools, text)
        if lost:
            return None, f"the template drops {'; '.join(lost[:2])}" + (
                f" (and {len(lost) - 2} more)" if len(lost) > 2 else "")
        return text, ""

    # -- rendering
    def render(self, messages: Sequence[Message], tools: Tools, *, fmt: str, row_id: str) -> str:
        """The prompt of one conversation, adapted; raises :class:`TemplateRefusal` naming the row and
        what the template refused or dropped when no adaptation gives a prompt that shows all of it."""
        self.probe(fmt)
        shape = shape_of(messages, tools)
        probed = self._probed_names()
        known = self._by_shape.get(shape)
        first_problem: str | None = None
        seen: list[Any] = []
        base = known if known is not None else probed
        for names in candidate_sets(base):
            adapted, adapted_tools = adapt(messages, tools, names)
            if (adapted, adapted_tools) in seen:
                continue
            seen.append((adapted, adapted_tools))
            text, problem = self._whole(messages, tools, names)
            if text is None:
                first_problem = first_problem or problem
                continue
            # Several added together: keep only those this conversation needs.
            for name in reversed([name for name in names if name not in base]):
                fewer = tuple(other for other in names if other != name)
                if len(names) - len(base) > 1:
                    shorter, _ = self._whole(messages, tools, fewer)
                    if shorter is not None:
                        names, text = fewer, shorter
            for name in names:
                if name not in self._decided:
                    self._decided[name] = Adaptation(name, f"row {row_id}: {first_problem}")
                    self._escalated.add(name)
            self._by_shape[shape] = names
            self.last_names = tuple(name for name in ORDER if name in names)
            return text
        raise TemplateRefusal(
            f"row {row_id}: {first_problem}, with every adaptation tried; supply a chat template that renders "
            "the whole conversation with --chat-template FILE"
        )

    def render_unrecorded(self, messages: Sequence[Message], tools: Tools, *, fmt: str) -> tuple[str, tuple[str, ...]]:
        """The prompt of a conversation that is no row (a probe) and the adaptations it took; what the rows'
        rendering learnt stays as it was (a probe's needs are not the rows')."""
        self.probe(fmt)
        saved = (dict(self._decided), set(self._escalated), dict(self._by_shape), self.last_names)
        try:
            text = self.render(messages, tools, fmt=fmt, row_id="probe")
            return text, self.last_names
        finally:
            self._decided, self._escalated, self._by_shape, self.last_names = saved

    @property
    def adaptations(self) -> list[dict[str, str]]:
        """Every adaptation made so far, in the order they apply, for results.json."""
        return [self._decided[name].as_dict() for name in ORDER if name in self._decided]
