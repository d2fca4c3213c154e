"""The datasets builder (apibank_dataset.ApiBank): local copy, verified downloads, export + load_dataset."""

from __future__ import annotations

import functools
import http.server
import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import datasets
import pytest
import yaml

from apibank.benchmark import AUDIT_STATUSES
from apibank.data.audits import audit_status
from apibank.data.features import arrow_row
from apibank.data.configs import TRAINING_CONFIG, required_files
from apibank.data.rows import iter_rows
from apibank.data.upstream import (
    BASE_URL_ENV,
    DATA_DIR_ENV,
    UpstreamDataError,
    manifest,
)
from apibank_dataset import ApiBank

TEST_CONFIGS = ("level-1", "level-2", "level-3")
ROOT = Path(__file__).resolve().parents[2]


def _floats_to_12_digits(value):
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {key: _floats_to_12_digits(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_floats_to_12_digits(item) for item in value]
    return value


def _decoded(row):
    """A plain row as the Arrow dataset gives it back: the turns' arguments and results as JSON values.

    Floats compare to 12 digits: ``Json()`` stores the exact JSON text, but decodes it with pandas'
    ujson, which can miss by one unit in the last place (0.7 -> 0.7000000000000001)."""
    def turn(t):
        stored = arrow_row({"history": [], "target": t})["target"]
        return {**t, **{k: None if stored[k] is None else json.loads(stored[k]) for k in ("arguments", "result")}}

    return _floats_to_12_digits({**row, "history": [turn(t) for t in row["history"]], "target": turn(row["target"])})


def _build(config, cache_dir, **kwargs):
    builder = ApiBank(config_name=config, cache_dir=str(cache_dir), **kwargs)
    builder.download_and_prepare()
    return builder


@pytest.fixture(scope="module")
def local_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("datasets-cache")


@pytest.mark.parametrize("config", TEST_CONFIGS)
def test_local_build_matches_rows(data_dir, local_cache, config):
    builder = _build(config, local_cache, data_dir=str(data_dir))
    dataset = builder.as_dataset(split="test")
    assert dataset.features["level"] == datasets.Value("int32")
    assert dataset.features["history"] == datasets.List(
        {**{name: datasets.Value("string") for name in ("role", "text", "api_name")},
         "arguments": datasets.Json(), "result": datasets.Json()}
    )
    assert dataset.features["reference"] == datasets.Value("string")
    assert dataset.features["audit_status"] == datasets.Value("string")
    built = _floats_to_12_digits(dataset.to_list())
    # every test row carries the shipped row audit's status, one of the taxonomy's
    assert [row.pop("audit_status") for row in built] == [audit_status(row["id"]) for row in built]
    assert {audit_status(row["id"]) for row in built} <= set(AUDIT_STATUSES)
    assert built == [_decoded(row) for row in iter_rows(config, data_dir)]
    assert list(builder.info.splits) == ["test"]


def test_config_table_is_the_single_source():
    from apibank.data.features import CONFIGS

    assert [(c.name, c.split, c.row_schema, c.description) for c in ApiBank.BUILDER_CONFIGS] == [
        (c.name, c.split, c.row_schema, c.description) for c in CONFIGS
    ]


def test_training_with_the_levels_present(data_dir, local_cache):
    builder = _build(TRAINING_CONFIG, local_cache, data_dir=str(data_dir), levels=(3,))
    dataset = builder.as_dataset(split="train")
    assert dataset.num_rows == 1245
    assert dataset.to_list() == list(iter_rows(TRAINING_CONFIG, data_dir, levels=(3,)))


def test_training_without_level_1_2_files_names_each_missing_file(data_dir, tmp_path):
    builder = ApiBank(config_name=TRAINING_CONFIG, cache_dir=str(tmp_path), data_dir=str(data_dir))
    with pytest.raises(UpstreamDataError) as caught:
        builder.download_and_prepare()
    for path in required_files(TRAINING_CONFIG, (1, 2)):
        assert path in str(caught.value) and manifest().url(path) in str(caught.value)
    assert not list(tmp_path.rglob("*.arrow"))


def test_modified_local_file_is_rejected(data_dir, tmp_path):
    copy = tmp_path / "copy"
    for path in required_files("level-3"):
        target = copy / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((data_dir / path).read_bytes())
    tampered = copy / "test-data/level-3.json"
    tampered.write_bytes(tampered.read_bytes().replace(b"John", b"Joan", 1))
    with pytest.raises(UpstreamDataError, match="checksum mismatch for test-data/level-3.json"):
        _build("level-3", tmp_path / "cache", data_dir=str(copy))


# ------------------------------------------------------------------------------------ downloads
class _UpstreamHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the upstream copy; ``corrupt`` maps URL paths to bytes served instead."""

    corrupt: dict[str, bytes] = {}
    requested: list[str] = []

    def log_message(self, *args):
        pass

    def _override(self) -> bytes | None:
        return type(self).corrupt.get(self.path.split("?")[0])

    def send_head(self):
        type(self).requested.append(self.path)
        body = self._override()
        if body is None:
            return super().send_head()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


@pytest.fixture
def upstream_server(data_dir, monkeypatch):
    handler = type("Handler", (_UpstreamHandler,), {"corrupt": {}, "requested": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(data_dir)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(BASE_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    # The suite runs with HF offline mode on; these downloads only reach the loopback server.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    yield handler
    server.shutdown()
    server.server_close()


def test_download_path_verifies_and_matches_local_rows(data_dir, upstream_server, tmp_path):
    builder = _build("level-3", tmp_path)
    rows = builder.as_dataset(split="test").to_list()
    assert _floats_to_12_digits(rows) == [{**_decoded(row), "audit_status": audit_status(row["id"])}
                                          for row in iter_rows("level-3", data_dir)]
    served = {path.lstrip("/") for path in upstream_server.requested}
    assert served == set(required_files("level-3"))
    train = _build(TRAINING_CONFIG, tmp_path, levels=(3,)).as_dataset(split="train")
    assert train.num_rows == 1245


def test_unreachable_file_is_named(upstream_server, tmp_path):
    # The served copy lacks the level-1/2 training files, as upstream's training set is large.
    with pytest.raises(UpstreamDataError, match="lv1-api-train.json"):
        _build(TRAINING_CONFIG, tmp_path)


def test_corrupted_download_is_a_clear_error_and_not_cached(data_dir, upstream_server, tmp_path):
    path = "test-data/level-3-batch-inf.json"
    original = (data_dir / path).read_bytes()
    corrupted = original.replace(b"ToolSearcher", b"ToolSearchr", 1)
    upstream_server.corrupt["/" + path] = corrupted
    with pytest.raises(UpstreamDataError) as caught:
        _build("level-3", tmp_path)
    message = str(caught.value)
    assert f"checksum mismatch for {path}" in message
    assert os.environ[BASE_URL_ENV] in message
    cached = [file for file in tmp_path.rglob("*") if file.is_file() and file.read_bytes() == corrupted]
    assert cached == []
    assert not list(tmp_path.rglob("*.arrow"))

    # Once the server is fixed the file is fetched again and the build succeeds.
    upstream_server.corrupt.clear()
    upstream_server.requested.clear()
    rebuilt = _build("level-3", tmp_path).as_dataset(split="test")
    assert rebuilt.num_rows == 295
    assert any(request.lstrip("/") == path for request in upstream_server.requested)


# ------------------------------------------------------------------------------------ export
@pytest.fixture(scope="module")
def exported(data_dir, tmp_path_factory):
    """`apibank export-dataset --data-dir DIR --output OUT`, run exactly so, as a console script."""
    out = tmp_path_factory.mktemp("export") / "apibank"
    env = dict(os.environ, HF_DATASETS_CACHE=str(tmp_path_factory.mktemp("export-cache")))
    env.pop(DATA_DIR_ENV, None)
    script = Path(sys.executable).with_name("apibank")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "apibank_cli"]
    result = subprocess.run(
        [*command, "export-dataset", "--data-dir", str(data_dir), "--output", str(out)],
        capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return out, result


def test_export_layout_and_card(exported):
    out, result = exported
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet")) == [
        "level-1/test-00000-of-00001.parquet",
        "level-2/test-00000-of-00001.parquet",
        "level-3/test-00000-of-00001.parquet",
        "training-chat/train-00000-of-00001.parquet",
        "training-prompt-completion/train-00000-of-00001.parquet",
        "training/train-00000-of-00001.parquet",
    ]
    readme = (out / "README.md").read_text("utf-8")
    header = yaml.safe_load(readme.split("---")[1])
    assert header["license"] == "apache-2.0"
    assert [c["config_name"] for c in header["configs"]] == [
        "level-1", "level-2", "level-3", "training", "training-chat", "training-prompt-completion"]
    counts = {info["config_name"]: info["splits"][0]["num_examples"] for info in header["dataset_info"]}
    assert counts == {"level-1": 774, "level-2": 238, "level-3": 295, "training": 1245,
                      "training-chat": 1226, "training-prompt-completion": 1226}
    # The shared copy lacks the level-1/2 training files: the export says so, in the card and on stderr.
    for path in required_files(TRAINING_CONFIG, (1, 2)):
        assert path in result.stderr and path in readme
    assert "holds levels 3 only" in readme
    assert "training: 1245 rows" in result.stdout
    assert "training-chat: 1226 rows" in result.stdout and "1226 of 1245 samples converted" in result.stderr


@pytest.mark.parametrize("config, split", [*((c, "test") for c in TEST_CONFIGS), (TRAINING_CONFIG, "train")])
def test_exported_repository_loads_like_the_builder(exported, data_dir, local_cache, tmp_path, config, split):
    out, _ = exported
    loaded = datasets.load_dataset(str(out), config, split=split, cache_dir=str(tmp_path))
    extra = {"levels": (3,)} if config == TRAINING_CONFIG else {}
    built = _build(config, local_cache, data_dir=str(data_dir), **extra).as_dataset(split=split)
    assert loaded.features == built.features
    assert loaded.to_list() == built.to_list()


def test_export_registers_the_benchmark_with_structured_rows(exported, data_dir, tmp_path):
    from apibank.hub.tasks import eval_yaml

    out, _ = exported
    assert yaml.safe_load((out / "eval.yaml").read_text("utf-8")) == eval_yaml()
    assert (out / "LICENSE").read_bytes() == (data_dir / "LICENSE").read_bytes()
    loaded = datasets.load_dataset(str(out), "level-1", split="test", cache_dir=str(tmp_path))
    assert isinstance(loaded.features["target"]["arguments"], datasets.Json)
    api_row = next(row for row in loaded if row["kind"] == "api")
    reference = json.loads(api_row["reference"])  # the metric's reference stays JSON text
    assert api_row["target"]["arguments"] == reference["gold"]["arguments"]
    assert api_row["target"]["result"] == reference["gold"]["result"]
    assert all(turn["arguments"] is None for turn in api_row["history"] if turn["role"] != "API")


def test_export_push_to_hub_uploads_the_repository(exported, tmp_path, monkeypatch):
    from support.hub_standin import HubStandIn, point_huggingface_hub_at

    from apibank.hub.dataset_repo import push_repository

    out, _ = exported
    with HubStandIn() as hub:
        point_huggingface_hub_at(hub, monkeypatch, tmp_path / "hub-cache")
        url = push_repository(out, "someone/API-Bank")
        files = hub.repos[("dataset", "someone/API-Bank")].files
    assert url.startswith(f"{hub.endpoint}/datasets/someone/API-Bank/commit/")
    local = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert set(files) == local and {"README.md", "eval.yaml", "LICENSE"} <= local
    assert files["eval.yaml"] == (out / "eval.yaml").read_bytes()


def test_export_push_target_must_be_a_hub_id(tmp_path, capsys):
    import apibank_cli

    with pytest.raises(SystemExit):
        apibank_cli.main(["export-dataset", "--output", str(tmp_path / "out"), "--push-to-hub", "no-namespace"])
    assert "not a Hub id" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_export_with_explicit_missing_levels_fails(data_dir, tmp_path, capsys):
    import apibank_cli

    status = apibank_cli.main([
        "export-dataset", "--data-dir", str(data_dir), "--output", str(tmp_path / "out"),
        "--cache-dir", str(tmp_path / "cache"), "--training-levels", "1,2,3",
    ])
    assert status == 2  # a user error: one line, status 2
    assert not (tmp_path / "out").exists()  # checked before anything is written
    error = capsys.readouterr().err
    listing = Path(re.search(r"listed in (\S+)\)$", error.strip()).group(1)).read_text()
    for path in required_files(TRAINING_CONFIG, (1, 2)):
        assert path in listing and manifest().url(path) in listing
