"""GGUF tokenizer folders come from the model layer's one preparation, with the conversion cached: a
second preparation (another folder, another template) converts nothing. The conversion itself is
stood in by the tiny test tokenizer; the real Gemma GGUF's side is in test_real_model.py."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from apibank.evals import local_model
from apibank.generate.backends import loading
from support.tiny import build_tiny_model

TEMPLATE = "{% for message in messages %}<<{{ message['content'] }}>>{% endfor %}"


@pytest.fixture
def fake_gguf(tmp_path, monkeypatch):
    """A .gguf file whose tokenizer "conversion" counts its calls and yields the tiny model's tokenizer."""
    monkeypatch.setenv("APIBANK_GGUF_CACHE", str(tmp_path / "cache"))
    tiny = build_tiny_model(tmp_path / "tiny", ["API-Request: [GetToday()] AI: Sure, the meeting is booked."])
    gguf = tmp_path / "models" / "m.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + bytes(64))
    real = AutoTokenizer.from_pretrained
    conversions = []

    def from_pretrained(location, *args, gguf_file=None, **kwargs):
        if gguf_file is not None:
            conversions.append((str(location), gguf_file))
            return real(str(tiny))
        return real(location, *args, **kwargs)

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", from_pretrained)
    return gguf, conversions


def _template_of(folder):
    if (folder / "chat_template.jinja").is_file():
        return (folder / "chat_template.jinja").read_text(encoding="utf-8")
    return json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")).get("chat_template")


def test_the_tokenizer_is_converted_once_and_the_folder_links_the_gguf(fake_gguf, tmp_path):
    gguf, conversions = fake_gguf
    first = loading.prepare_gguf_folder(gguf, tmp_path / "a", chat_template=TEMPLATE)
    assert conversions == [(str(gguf.parent.resolve()), "m.gguf")]
    source = loading.resolve_model(str(gguf))
    assert (loading.converted_tokenizer_folder(source) / "tokenizer_config.json").is_file()
    assert _template_of(first) == TEMPLATE
    assert (first / "m.gguf").is_symlink() and (first / "m.gguf").resolve() == gguf.resolve()

    second = loading.prepare_gguf_folder(gguf, tmp_path / "b", chat_template="{{ messages[0]['content'] }}",
                                         link_gguf=False)
    assert len(conversions) == 1  # read from the cache
    assert _template_of(second) == "{{ messages[0]['content'] }}" and not (second / "m.gguf").exists()
    assert AutoTokenizer.from_pretrained(second)("AI: Sure")["input_ids"] == \
        AutoTokenizer.from_pretrained(first)("AI: Sure")["input_ids"]


def test_without_the_cache_every_preparation_converts(fake_gguf, tmp_path, monkeypatch):
    gguf, conversions = fake_gguf
    monkeypatch.setenv("APIBANK_GGUF_CACHE", "off")
    loading.prepare_gguf_folder(gguf, tmp_path / "a")
    loading.prepare_gguf_folder(gguf, tmp_path / "b")
    assert len(conversions) == 2 and not (tmp_path / "cache").exists()


def test_not_a_gguf_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a .gguf file"):
        loading.prepare_gguf_folder(tmp_path, tmp_path / "out")


def test_the_inspect_helper_prepares_its_tokenizer_through_the_model_layer(fake_gguf, tmp_path, monkeypatch):
    gguf, conversions = fake_gguf
    monkeypatch.setattr(loading, "packaged_gemma", lambda: gguf)
    folder = local_model.prepare_tokenizer(tmp_path / "tok")
    assert _template_of(folder) == local_model.PLAIN_TEMPLATE and not (folder / "m.gguf").exists()
    assert len(conversions) == 1
    command = local_model.inspect_command(folder)
    assert f"model_path={gguf.parent}" in command and f"tokenizer_path={folder}" in command


def test_apibank_inspect_model_prints_the_offline_inspect_command(fake_gguf, tmp_path, monkeypatch, capsys, data_dir):
    from apibank.cli.main import main

    gguf, conversions = fake_gguf
    monkeypatch.setattr(loading, "packaged_gemma", lambda: gguf)
    assert main(["inspect-model", "--output", str(tmp_path / "tok"), "--data-dir", str(data_dir), "--level", "3"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed[:4] == ["HF_HUB_OFFLINE=1", "inspect", "eval", "apibank/api_bank"]
    assert f"tokenizer_path={(tmp_path / 'tok').resolve()}" in printed and "level=3" in printed
    assert f"data_dir={data_dir}" in printed and len(conversions) == 1


def test_the_printed_inspect_command_makes_no_hub_request_and_logs_under_output(fake_gguf, tmp_path, monkeypatch,
                                                                                capsys, data_dir):
    """Run as printed, with the network cut, on a local model folder (the tiny model in place of the GGUF):
    inspect-ai's extra lookup of the model's name must not reach for the Hub (online it retried for 48 s)."""
    import os
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    from apibank.cli.main import main

    gguf, _ = fake_gguf
    monkeypatch.setattr(loading, "packaged_gemma", lambda: gguf)
    out = tmp_path / "tok"
    assert main(["inspect-model", "--output", str(out), "--data-dir", str(data_dir), "--limit", "1"]) == 0
    words = shlex.split(capsys.readouterr().out)
    assert words[:3] == ["HF_HUB_OFFLINE=1", "inspect", "eval"]
    assert words[-2:] == ["--log-dir", str(out.resolve() / "logs")]
    tiny = tmp_path / "tiny"  # the fixture's tiny model: a local folder like the GGUF's
    argv = [f"model_path={tiny}" if word.startswith("model_path=") else word for word in words[2:]]
    position = argv.index(f"gguf_file={gguf.name}")
    del argv[position - 1 : position + 1]
    offline = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")  # the suite's own settings
    env = {name: value for name, value in os.environ.items() if name not in offline}
    env.update(word.split("=", 1) for word in words[:1])
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root / "tests" / "support" / "no_network"), str(root),
                                         env.get("PYTHONPATH", "")])
    env["LOOKUP_LOG"] = str(tmp_path / "lookups.txt")
    where = tmp_path / "cwd"
    where.mkdir()
    done = subprocess.run([sys.executable, "-m", "inspect_ai", *argv, "--display", "plain"], cwd=where, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    looked_up = (tmp_path / "lookups.txt").read_text().split() if (tmp_path / "lookups.txt").exists() else []
    assert looked_up == []
    assert len(list((out / "logs").glob("*.eval"))) == 1 and list(where.iterdir()) == []


def test_convert_refuses_in_one_line_what_it_cannot_convert(tmp_path, monkeypatch, capsys):
    from apibank.cli.main import main

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    notes = tmp_path / "notes.txt"
    notes.write_text("not a model", encoding="utf-8")
    monkeypatch.setenv("APIBANK_GGUF_CACHE", "off")
    for model, said in ((gguf, "the conversion cache is off (APIBANK_GGUF_CACHE=off)"),
                        (notes, "not a .gguf file"), (tmp_path / "missing.gguf", "no such file or folder")):
        assert main(["convert", str(model)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1 and said in captured.err, captured.err
