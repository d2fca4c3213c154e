"""The evaluate module: loading from a path and from the exported Hub layout, the documented example,
add_batch, distributed mode, and clear errors on bad input."""

from __future__ import annotations

import doctest
import json
import threading
from pathlib import Path

import evaluate
import pytest

import apibank_cli
from apibank.hub.metric_space import push_metric
from apibank.data.rows import iter_rows
from apibank.judge.scoring import ReferenceError, score

METRIC_SCRIPT = Path(__file__).resolve().parents[2] / "apibank_metric.py"


@pytest.fixture(autouse=True)
def local_data(data_dir, monkeypatch):
    monkeypatch.setenv("APIBANK_DATA_DIR", str(data_dir))


@pytest.fixture(scope="module")
def sample_rows(data_dir):
    """A mix: API and response rows of every level, with a few wrong predictions."""
    picked = []
    for config in ("level-1", "level-2", "level-3"):
        rows = list(iter_rows(config, data_dir))
        picked += [r for r in rows if r["kind"] == "api"][:6] + [r for r in rows if r["kind"] == "response"][:3]
    predictions = [r["expected_output"] for r in picked]
    predictions[1] = "I don't know."
    predictions[2] = "[GetUserToken(username='nobody', password='x')]"
    return predictions, [r["reference"] for r in picked]


def test_load_from_the_script_path(sample_rows):
    metric = evaluate.load(str(METRIC_SCRIPT))
    assert metric.name == "apibank"
    assert "API-Bank" in metric.description and "li-etal-2023-api" in metric.citation
    predictions, references = sample_rows
    results = metric.compute(predictions=predictions, references=references)
    assert results["paper"] == score(predictions, references)["paper"]
    assert results["paper"]["level-1"]["errors"]["NO_API_CALL"] == 1
    assert set(results) >= {"paper", "corrected", "revision", "protocols", "paper_api_accuracy", "rouge_l"}


def test_export_then_load_from_the_folder_and_from_its_parent(tmp_path, sample_rows, monkeypatch):
    assert apibank_cli.main(["export-metric", "--output", str(tmp_path)]) == 0
    folder = tmp_path / "apibank"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "apibank.py", "app.py", "requirements.txt"]
    card = (folder / "README.md").read_text("utf-8")
    assert card.startswith("---\n") and "# Metric Card for API-Bank" in card and "{revision}" not in card
    for section in ("## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                    "#### Values from Popular Papers", "### Examples", "## Limitations and Bias",
                    "## Citation", "## Further References"):
        assert section in card
    assert "apibank" in (folder / "requirements.txt").read_text("utf-8")
    predictions, references = sample_rows
    expected = score(predictions, references)
    by_path = evaluate.load(str(folder)).compute(predictions=predictions, references=references)
    assert by_path["corrected"] == expected["corrected"]
    monkeypatch.chdir(tmp_path)
    by_name = evaluate.load("apibank").compute(predictions=predictions, references=references)
    assert by_name["paper"] == expected["paper"]


def test_push_uploads_the_folder_as_a_space(tmp_path):
    calls = []

    class FakeApi:
        def create_repo(self, repo_id, **kwargs):
            calls.append(("create", repo_id, kwargs))

        def upload_folder(self, **kwargs):
            calls.append(("upload", kwargs))

    url = push_metric(tmp_path, "someone/apibank", api=FakeApi())
    assert url == "https://huggingface.co/spaces/someone/apibank"
    assert calls[0][2]["repo_type"] == "space" and calls[0][2]["space_sdk"] == "gradio"
    assert calls[1][1]["repo_type"] == "space" and calls[1][1]["folder_path"] == str(tmp_path)


def test_the_documented_example_runs():
    metric = evaluate.load(str(METRIC_SCRIPT))
    shim = type("evaluate_shim", (), {"load": staticmethod(lambda name: metric)})
    test = doctest.DocTestParser().get_doctest(metric.inputs_description, {"evaluate": shim}, "example", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert len(test.examples) >= 4


def test_add_batch_gives_the_same_scores(sample_rows):
    predictions, references = sample_rows
    metric = evaluate.load(str(METRIC_SCRIPT))
    for start in range(0, len(predictions), 4):
        metric.add_batch(predictions=predictions[start : start + 4], references=references[start : start + 4])
    assert metric.compute()["paper"] == score(predictions, references)["paper"]


def test_distributed_mode(sample_rows, tmp_path):
    predictions, references = sample_rows
    half = len(predictions) // 2
    metrics = [
        evaluate.load(str(METRIC_SCRIPT), num_process=2, process_id=rank, experiment_id="apibank-test",
                      cache_dir=str(tmp_path))
        for rank in range(2)
    ]
    results = [None, None]

    def worker(rank):
        part = slice(0, half) if rank == 0 else slice(half, None)
        metrics[rank].add_batch(predictions=predictions[part], references=references[part])
        results[rank] = metrics[rank].compute()

    threads = [threading.Thread(target=worker, args=(rank,)) for rank in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert results[1] is None
    assert results[0]["corrected"] == score(predictions, references)["corrected"]


@pytest.mark.parametrize(
    "predictions, references, message",
    [
        (["a", "b"], None, "references is None"),
        (None, ["{}"], "predictions is None"),
        (["a"], [], "1 predictions for 0 references"),
        ([None], ['{"v": 1}'], "malformed|predictions\\[0\\]"),
        (["a"], ["Paris"], "not JSON"),
        (["a"], [json.dumps({"answers": {"text": ["Paris"]}, "id": "squad-1"})], "not an apibank reference"),
        (["a"], [json.dumps({"v": 1, "id": "x"})], "malformed"),
        ("one text", ["{}"], "list of texts"),
    ],
)
def test_bad_input_is_a_clear_error(predictions, references, message):
    with pytest.raises(ValueError, match=message):
        score(predictions, references)


def test_mixed_revisions_are_refused(sample_rows):
    predictions, references = sample_rows
    other = json.loads(references[0])
    other["revision"] = "0" * 40
    with pytest.raises(ReferenceError, match="different dataset revisions"):
        score(predictions[:2], [references[1], json.dumps(other)])


def test_metric_rejects_mismatched_lengths():
    metric = evaluate.load(str(METRIC_SCRIPT))
    with pytest.raises(ValueError):
        metric.compute(predictions=["a", "b"], references=["{}"])


def test_load_after_pushing_from_a_hub_stand_in(tmp_path, sample_rows, monkeypatch):
    """`evaluate.load("NAMESPACE/apibank")` against a loopback server laid out like the Hub's Spaces."""
    import functools
    import http.server

    import evaluate.config

    assert apibank_cli.main(["export-metric", "--output", str(tmp_path / "export")]) == 0
    folder = tmp_path / "export" / "apibank"
    prefix = "/spaces/someone/apibank/resolve/"
    served = []

    class SpaceFiles(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            if not path.startswith(prefix):
                return str(tmp_path / "missing")
            revision, _, name = path[len(prefix):].partition("/")
            served.append((revision, name))
            return str(folder / name) if revision == "main" else str(tmp_path / "missing")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SpaceFiles, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}"
        monkeypatch.setattr(evaluate.config, "HF_ENDPOINT", endpoint)
        monkeypatch.setattr(evaluate.config, "HUB_EVALUATE_URL", endpoint + "/spaces/{path}/resolve/{revision}/{name}")
        monkeypatch.setattr(evaluate.config, "HF_UPDATE_DOWNLOAD_COUNTS", False)
        metric = evaluate.load("someone/apibank", cache_dir=str(tmp_path / "cache"))
        predictions, references = sample_rows
        assert metric.compute(predictions=predictions, references=references)["paper"] == score(predictions, references)["paper"]
        assert ("main", "apibank.py") in served
    finally:
        server.shutdown()
