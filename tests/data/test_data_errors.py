"""Missing data is an environment error, raised once and clearly, never a tool exception per sample."""

from __future__ import annotations

import pytest
from apibank_tools import Session
from apibank_tools.environment import PristineData

from apibank.data.rows import iter_rows
from apibank.data.upstream import BASE_URL_ENV, DATA_DIR_ENV, UpstreamDataError
from apibank.judge.scoring import score


def test_a_tool_whose_database_is_missing_raises_instead_of_reporting(tmp_path):
    session = Session("level-1-2", PristineData(tmp_path))
    with pytest.raises(UpstreamDataError, match="init_database/Account.json"):
        session.call("GetUserToken", {"username": "JohnDoe", "password": "pass123"})


def test_scoring_without_data_fails_up_front(monkeypatch, tmp_path, data_dir):
    rows = list(iter_rows("level-1", data_dir))[:3]
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setenv(BASE_URL_ENV, "http://127.0.0.1:9")
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(UpstreamDataError, match="could not download"):
        score([r["expected_output"] for r in rows], [r["reference"] for r in rows])


def test_an_unloadable_toolsearcher_model_raises_instead_of_reporting(monkeypatch, data_dir):
    from apibank_tools import retrieval
    from apibank_tools.errors import EnvironmentUnavailable

    monkeypatch.setattr(retrieval, "_RETRIEVERS", {})
    monkeypatch.setenv(retrieval.VOCAB_ENV, "/nonexistent/vocab.txt")
    session = Session("level-1-2", PristineData(data_dir))
    with pytest.raises(EnvironmentUnavailable, match="cannot be loaded"):
        session.call("ToolSearcher", {"keywords": "weather"})
