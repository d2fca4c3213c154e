"""``apibank convert FILE.gguf``: the GGUF file converted to an ordinary transformers folder (the package's
conversion cache, the one ``apibank evaluate --model FILE.gguf`` fills and reads), converted now where it
is not there yet; prints the folder alone on stdout, for the tools that take a model folder and no GGUF
file (``lm_eval --model_args pretrained=FOLDER``, lighteval's ``model_name=FOLDER``)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="FILE.gguf", help="a local .gguf file")


def run(args: argparse.Namespace) -> int:
    import sys

    from apibank.benchmark import GGUF_CACHE_ENV
    from apibank.errors import UsageError
    from apibank.generate.backends.loading import (check_gguf_extra, converted_folder, converted_model_folder,
                                                   resolve_model)

    source = resolve_model(args.model)
    if source.kind != "gguf":
        raise UsageError(f"{args.model}: not a .gguf file; apibank convert takes a local GGUF file (a model folder "
                         "or a Hub id needs no conversion)")
    check_gguf_extra()
    folder = converted_folder(source)
    if folder is None:
        raise UsageError(f"{args.model}: the conversion cache is off ({GGUF_CACHE_ENV}=off), and the converted "
                         f"folder lives there; unset {GGUF_CACHE_ENV} (or name a folder with it)")
    if not (folder / "config.json").is_file():
        print(f"apibank convert: converting {source.label} (minutes on a small CPU; once per file and "
              "transformers version)", file=sys.stderr)
    print(converted_model_folder(source))
    return 0
