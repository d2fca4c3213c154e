"""Supervised fine-tuning on API-Bank's training rows, with the loss on the answer only.

Each training sample teaches one answer: the API request or the response that follows its dialogue.
The rows are tokenized here, exactly as the benchmark renders them at test time, into ``input_ids``
and a ``completion_mask`` that covers the answer (and the end of the turn) only:

* ``paper``: the prompt is :func:`apibank.generate.conversation.paper_text`. A tokenizer without a
  chat template gets it as plain text (with the tokenizer's usual special tokens) and learns the
  answer followed by a line end, where the benchmark stops a plain-text answer; with a chat template
  the prompt is the user's turn and the answer the assistant's, up to the template's end of turn.
* ``chat``: the conversation with tools of :mod:`apibank.train.formats` (what ``--format tools``
  sends) rendered by the chat template; the answer is the last assistant turn.

Earlier assistant turns of a dialogue are context here, not targets: each of them is the answer of
its own sample. That is why the mask comes from the prompt/answer split rather than from TRL's
``assistant_only_loss``, which would also need ``{% generation %}`` markers that few templates have.

TRL's ``SFTTrainer`` trains on the tokenized rows (LoRA through PEFT, or every weight), saving
checkpoints in ``OUTPUT/checkpoints``; the same call resumes from the latest one. At the end the
adapter is merged into the base and the model and tokenizer are saved in ``OUTPUT``, a folder that
``apibank evaluate --model OUTPUT`` loads like any other.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

from apibank.errors import UserError
from apibank.files import FINETUNE_FILE

# The training-row format each fine-tuning format reads, and the test format it is judged in.
ROW_FORMAT = {"chat": "chat", "paper": "prompt-completion"}
EVALUATION_FORMAT = {"chat": "tools", "paper": "paper"}
MANIFEST = FINETUNE_FILE
CHECKPOINTS = "checkpoints"
MIN_SAMPLES = 4
# Full fine-tuning (every weight) on a GPU that holds this many bytes per parameter: weights,
# gradients and Adam's two moments in float32; LoRA below that, and always on a CPU.
FULL_TUNING_BYTES_PER_PARAMETER = 16


class FinetuneError(UserError, ValueError):
    """A fine-tuning request that cannot be carried out as given; the text says what to do."""


@dataclass(frozen=True)
class Recipe:
    """The training settings. The defaults fit Gemma 3 270M on a 2-core CPU in under an hour: about
    25 CPU-seconds per sample of ~330 tokens with LoRA, so 256 samples once is 45-55 minutes."""

    max_samples: int | None = 256
    epochs: float = 1.0
    learning_rate: float = 2e-4
    lora: bool | None = None  # None: LoRA, except on a GPU that holds full fine-tuning
    lora_rank: int = 16
    max_length: int = 1024
    batch_size: int = 2
    gradient_accumulation: int = 4
    seed: int = 0


@dataclass(frozen=True)
class Request:
    model: str
    output: str
    format: str
    levels: tuple[int, ...]
    data_dir: str | None
    recipe: Recipe = field(default_factory=Recipe)
    progress: bool = True  # the trainer's progress bar (else one line of its logs per step)

    def manifest(self) -> dict[str, Any]:
        """What identifies a run: a folder holding another run is refused, the same run resumes."""
        return {"model": self.model, "format": self.format, "levels": list(self.levels),
                "data_dir": self.data_dir, "recipe": asdict(self.recipe)}


# --------------------------------------------------------------------------------- output folder
def read_manifest(output: Path) -> dict[str, Any] | None:
    try:
        return json.loads((output / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def output_state(request: Request) -> str:
    """"new", "resume" or "complete"; raises :class:`FinetuneError` when the folder holds something else."""
    from apibank.run_folder import own_file

    output = Path(request.output)
    if not output.exists() or not any(not own_file(path) for path in output.iterdir()):
        return "new"
    manifest = read_manifest(output)
    if manifest is None:
        raise FinetuneError(f"--output {output}: the folder holds other files; give a new or empty folder")
    settings = {key: manifest.get(key) for key in request.manifest()}
    if settings != request.manifest():
        differing = ", ".join(key for key in settings if settings[key] != request.manifest()[key])
        raise FinetuneError(f"--output {output}: the folder holds another fine-tuning run (different {differing}); "
                            "give a new folder, or repeat that run's command to resume it")
    return "complete" if manifest.get("status") == "complete" else "resume"


def usual_permissions(output: Path) -> None:
    """The model's files readable as any other output: transformers writes ``model.safetensors`` through a
    private temporary file (mode 0600), which would keep it from the user's group, a server or a container
    user; the files get the mode a new file gets under the user's umask."""
    from apibank.files import new_file_mode

    mode = new_file_mode()
    for path in output.iterdir():
        if path.is_file() and path.stat().st_mode & 0o777 == 0o600:
            path.chmod(mode)


def write_manifest(output: Path, request: Request, **extra: Any) -> None:
    from apibank.files import atomic_write_text

    output.mkdir(parents=True, exist_ok=True)
    atomic_write_text(output / MANIFEST, json.dumps({**request.manifest(), **extra}, indent=2) + "\n")


# --------------------------------------------------------------------------------- tokenized rows
def _template(tokenizer) -> str | None:
    template = getattr(tokenizer, "chat_template", None)
    return template or None


def _encode(tokenizer, text: str, *, special: bool) -> list[int]:
    return tokenizer(text, add_special_tokens=special)["input_ids"]


def tokenize_paper(tokenizer, example: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(prompt ids, answer ids) of a prompt/completion row, as the benchmark renders the prompt."""
    if _template(tokenizer) is None:
        return _encode(tokenizer, example["prompt"], special=True), _encode(tokenizer, example["completion"] + "\n",
                                                                             special=False)
    user = [{"role": "user", "content": example["prompt"]}]
    return _split_rendering(tokenizer, user, [{"role": "assistant", "content": example["completion"]}], None)


def tokenize_chat(tokenizer, example: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(prompt ids, answer ids) of a conversation with tools: the answer is the last assistant turn."""
    messages = example["messages"]
    return _split_rendering(tokenizer, messages[:-1], messages[-1:], example["tools"] or None)


def _split_rendering(tokenizer, context: list[dict], answer: list[dict], tools) -> tuple[list[int], list[int]]:
    prompt = tokenizer.apply_chat_template(context, tools=tools, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template(context + answer, tools=tools, tokenize=False)
    if not full.startswith(prompt):
        raise FinetuneError("the chat template renders the conversation differently once the answer is added, "
                            "so the answer cannot be told apart; use --format paper or a prefix-preserving template")
    # A chat template writes the special tokens itself, as it does at test time.
    return _encode(tokenizer, prompt, special=False), _encode(tokenizer, full[len(prompt):], special=False)


@dataclass
class TrainingRows:
    rows: list[dict[str, list[int]]]
    available: int  # converted samples of the levels asked for
    too_long: int  # of the samples drawn, those over max_length
    conversion: str  # the converter's summary (what could not be converted, by cause)

    def summary(self) -> str:
        longer = f", {self.too_long} drawn samples over the length limit left out" if self.too_long else ""
        return f"{len(self.rows)} training samples ({self.conversion}{longer})"


def training_rows(tokenizer, request: Request) -> TrainingRows:
    """The tokenized rows: a seeded draw of ``max_samples`` converted samples that fit ``max_length``."""
    from apibank.train.formats import convert_training

    conversion = convert_training(request.data_dir, request.levels)
    examples = conversion.examples[ROW_FORMAT[request.format]]
    tokenize = tokenize_chat if request.format == "chat" else tokenize_paper
    order = list(range(len(examples)))
    random.Random(request.recipe.seed).shuffle(order)
    wanted = request.recipe.max_samples or len(examples)
    rows: list[dict[str, list[int]]] = []
    too_long = 0
    for index in order:
        if len(rows) == wanted:
            break
        prompt, answer = tokenize(tokenizer, examples[index])
        if len(prompt) + len(answer) > request.recipe.max_length:
            too_long += 1
            continue
        rows.append({"input_ids": prompt + answer, "completion_mask": [0] * len(prompt) + [1] * len(answer)})
    if len(rows) < MIN_SAMPLES:
        raise FinetuneError(f"only {len(rows)} training samples fit (of {len(examples)} converted, "
                            f"{too_long} longer than {request.recipe.max_length} tokens); at least {MIN_SAMPLES} "
                            "are needed: raise --max-samples or --max-length, or add levels")
    return TrainingRows(rows, len(examples), too_long, conversion.summary())


# --------------------------------------------------------------------------------- model
def load_base(model: str):
    """(tokenizer, model) through the benchmark's model layer (a .gguf file via its conversion cache)."""
    import torch

    from apibank.generate.backends.loading import load_tokenizer_and_model, resolve_model

    # float32 master weights; on a GPU the trainer computes in bfloat16 (mixed precision).
    tokenizer, base = load_tokenizer_and_model(resolve_model(model), model_kwargs={"dtype": torch.float32})
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, base


def use_lora(requested: bool | None, model) -> bool:
    """LoRA unless asked otherwise, or unless a GPU holds full fine-tuning of the model."""
    if requested is not None:
        return requested
    import torch

    if not torch.cuda.is_available():
        return True
    parameters = sum(p.numel() for p in model.parameters())
    return parameters * FULL_TUNING_BYTES_PER_PARAMETER > 0.8 * torch.cuda.get_device_properties(0).total_memory


def _trainer(tokenizer, model, rows: list[dict[str, list[int]]], request: Request, lora: bool, checkpoints: Path):
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    recipe = request.recipe
    on_gpu = torch.cuda.is_available()
    # Recomputing activations trades time for memory: worth it on a GPU, not on a CPU's plentiful RAM.
    # (transformers 5 renamed gradient_checkpointing to activation_checkpointing.)
    names = {option.name for option in fields(SFTConfig)}
    checkpointing = "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    config = SFTConfig(
        output_dir=str(checkpoints),
        num_train_epochs=recipe.epochs,
        per_device_train_batch_size=recipe.batch_size,
        gradient_accumulation_steps=recipe.gradient_accumulation,
        learning_rate=recipe.learning_rate,
        lr_scheduler_type="cosine",
        logging_steps=1,
        save_strategy="steps",
        save_steps=0.05,  # a checkpoint every 5% of the steps: an interrupted run loses little
        save_total_limit=2,
        report_to=[],
        seed=recipe.seed,
        data_seed=recipe.seed,
        completion_only_loss=True,
        max_length=recipe.max_length,
        bf16=on_gpu and torch.cuda.is_bf16_supported(),
        use_cpu=not on_gpu,
        dataloader_num_workers=0,
        disable_tqdm=not request.progress,
        **{checkpointing: on_gpu},
    )
    peft_config = None
    if lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=recipe.lora_rank, lora_alpha=2 * recipe.lora_rank, lora_dropout=0.05,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
    return SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(rows),
                      processing_class=tokenizer, peft_config=peft_config)


def last_checkpoint(checkpoints: Path) -> str | None:
    if not checkpoints.is_dir():
        return None
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(checkpoints))


def finetune(request: Request, log=print) -> dict[str, Any]:
    """Train, merge and save; returns what the run did (also written to ``OUTPUT/finetune.json``)."""
    import time

    output = Path(request.output)
    if output_state(request) == "complete":
        log(f"{output} already holds this fine-tuned model; nothing to do")
        return read_manifest(output) or {}
    started = time.monotonic()
    tokenizer, model = load_base(request.model)
    rows = training_rows(tokenizer, request)
    log(rows.summary())
    if request.format == "chat" and _template(tokenizer) is None:
        raise FinetuneError(f"--model {request.model}: no chat template, which --format chat needs; use --format paper")
    lora = use_lora(request.recipe.lora, model)
    checkpoints = output / CHECKPOINTS
    resume_from = last_checkpoint(checkpoints)
    write_manifest(output, request, status="training", lora=lora)
    if resume_from:
        log(f"resuming from {resume_from}")
    trainer = _trainer(tokenizer, model, rows.rows, request, lora, checkpoints)
    result = trainer.train(resume_from_checkpoint=resume_from)
    trained = trainer.model
    if lora:
        trained = trained.merge_and_unload()
    trained.save_pretrained(output)
    tokenizer.save_pretrained(output)
    usual_permissions(output)
    summary = {"status": "complete", "lora": lora, "samples": len(rows.rows), "available": rows.available,
               "too_long": rows.too_long, "conversion": rows.conversion, "steps": result.global_step,
               "train_loss": round(float(result.training_loss), 4), "seconds": round(time.monotonic() - started, 1),
               "peak_rss_mib": peak_rss_mib(),
               "evaluate_with": f"apibank evaluate --model {output} --format {EVALUATION_FORMAT[request.format]}"}
    write_manifest(output, request, **summary)
    shutil.rmtree(checkpoints, ignore_errors=True)
    return summary


def peak_rss_mib() -> int | None:
    """This process's peak resident memory so far, in MiB (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024))  # bytes on macOS, KiB on Linux


def parse_levels(values: Iterable[str] | None, known: Iterable[int]) -> tuple[int, ...]:
    """Level numbers from ``1``, ``level-1`` ...; raises :class:`FinetuneError` for an unknown level."""
    known = tuple(known)
    if not values:
        return known
    levels = []
    for value in values:
        number = str(value).removeprefix("level-")
        if not number.isdigit() or int(number) not in known:
            raise FinetuneError(f"--levels {value}: unknown level; give some of {', '.join(map(str, known))}")
        levels.append(int(number))
    return tuple(sorted(set(levels)))
