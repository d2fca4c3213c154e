"""vLLM's platform plugin (``apibank.vllm_cpu_ray``) as vLLM meets it in every process of its environment:
declared in setup.cfg, cheap to import, and silent unless the vllm backend asked for it. Its working half (the
platform, a Ray run) is tested where vLLM is installed: tests/generate/test_vllm_engine.py."""

from __future__ import annotations

import configparser
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from apibank import vllm_cpu_ray

ROOT = Path(__file__).resolve().parents[1]


def test_setup_cfg_registers_the_plugin_with_vllm():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    (line,) = [line for line in config["options.entry_points"]["vllm.platform_plugins"].splitlines() if line.strip()]
    name, _, target = (part.strip() for part in line.partition("="))
    module, _, function = target.partition(":")
    assert name == vllm_cpu_ray.PLUGIN_NAME
    assert getattr(importlib.import_module(module), function) is vllm_cpu_ray.platform_plugin
    assert "apibank.vllm_cpu_ray" in config["options"]["packages"].split()


@pytest.mark.parametrize("value", [None, "", "0", "true"])
def test_the_plugin_names_no_platform_unless_asked(value, monkeypatch):
    """vLLM asks every platform plugin in every process; unasked, this one answers None without importing
    vLLM (here vLLM is not even installed), so vLLM chooses as it would without this package."""
    if value is None:
        monkeypatch.delenv(vllm_cpu_ray.ACTIVATE, raising=False)
    else:
        monkeypatch.setenv(vllm_cpu_ray.ACTIVATE, value)
    assert vllm_cpu_ray.platform_plugin() is None


def test_importing_the_plugin_imports_nothing_heavy():
    code = ("import sys, apibank.vllm_cpu_ray\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('apibank', 'vllm', 'torch', 'ray')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=True)
    assert result.stdout.split() == ["['apibank',", "'apibank.benchmark',", "'apibank.vllm_cpu_ray']"]
