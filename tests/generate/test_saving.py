"""No lost work: each prediction is saved the moment its row is done, whatever the backend (it reports rows
through ``on_completion``, or its batch when it ends); Ctrl-C loses only the rows in flight; a resume keeps
only predictions of the same run, comparing each level's and kind's budget for that level and kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from apibank.generate import DecodingSettings, OracleBackend, TransformersBackend, generate_predictions
from apibank.generate.backends import Completion
from apibank.generate.predictions import ResumeMismatch, check_resumable, read_predictions
from apibank.generate.runner import sized_settings
from apibank.pipeline import load_rows


@pytest.fixture(scope="module")
def level_rows(data_dir):
    return load_rows(["level-1"], data_dir)


@pytest.fixture(scope="module")
def rows(data_dir):
    """Four API-call and four response rows of each level."""
    return load_rows(None, data_dir, limit=4)


def timeless(records):
    """Records without what differs from run to run (generation seconds)."""
    return [{key: value for key, value in record.items() if key != "seconds"} for record in records]


class ReportsThenInterrupted(OracleBackend):
    """The gold answers, reported row by row; Ctrl-C arrives after ``after`` rows of the ``batch``-th batch
    (counting from 0) are done, as it would while the rest of that batch is still being generated."""

    def __init__(self, batch: int, after: int) -> None:
        self.batch, self.after, self.batches = batch, after, 0

    def generate(self, conversations, prompts, settings, on_completion=None):
        completions = super().generate(conversations, prompts, settings)
        for index, completion in enumerate(completions):
            if self.batches == self.batch and index == self.after:
                raise KeyboardInterrupt
            on_completion(index, completion)
        self.batches += 1
        return completions


@pytest.mark.parametrize("after", [0, 3, 7])
def test_ctrl_c_inside_a_batch_keeps_every_row_already_done(rows, tmp_path, after):
    path = tmp_path / "predictions.jsonl"
    with pytest.raises(KeyboardInterrupt):
        generate_predictions(rows, ReportsThenInterrupted(batch=1, after=after), fmt="paper", batch_size=8,
                             output_path=path, progress=False)
    saved = read_predictions(path)
    assert len(saved) == 8 + after  # the whole first batch, and the rows of the second one that were done
    resumed = generate_predictions(rows, OracleBackend(), fmt="paper", batch_size=8, output_path=path,
                                   progress=False)
    fresh = generate_predictions(rows, OracleBackend(), fmt="paper", batch_size=8, progress=False)
    assert timeless(resumed) == timeless(fresh)
    assert sorted(r["id"] for r in read_predictions(path)) == sorted(r["id"] for r in rows)


class BatchAtOnce(OracleBackend):
    """A backend written before ``on_completion``: its rows are saved when its batch ends."""

    def __init__(self) -> None:
        self.batches = 0

    def generate(self, conversations, prompts, settings):
        if self.batches == 1:
            raise KeyboardInterrupt
        self.batches += 1
        return super().generate(conversations, prompts, settings)


def test_a_backend_that_reports_nothing_is_saved_batch_by_batch(rows, tmp_path):
    path = tmp_path / "predictions.jsonl"
    with pytest.raises(KeyboardInterrupt):
        generate_predictions(rows, BatchAtOnce(), fmt="paper", batch_size=5, output_path=path, progress=False)
    assert len(read_predictions(path)) == 5


def test_the_transformers_backend_reports_each_row_as_it_ends(tiny_backend, rows):
    """Each row is reported once, the step it ends (rows with smaller budgets first), with the completion the
    batch returns for it; reporting changes no answer."""
    from apibank.generate import build_conversation

    level1 = [row for row in rows if row["level"] == 1]
    conversations = [build_conversation(row, "paper") for row in level1]
    prompts = [tiny_backend.render(c) for c in conversations]
    settings = DecodingSettings(max_new_tokens=12, budgets=(("level-1/api", 2), ("level-1/response", 12)))
    reported: list[tuple[int, Completion]] = []
    completions = tiny_backend.generate(conversations, prompts, settings,
                                        on_completion=lambda i, c: reported.append((i, c)))
    assert sorted(i for i, _ in reported) == list(range(len(level1)))
    assert [completions[i] for i, _ in reported] == [c for _, c in reported]
    ends = [c.generated_tokens for _, c in reported]  # the decode step each row ended at
    assert ends == sorted(ends) and ends[0] <= 2 < ends[-1]
    assert all(c.seconds > 0 for _, c in reported)
    plain = tiny_backend.generate(conversations, prompts, settings)
    assert [c.raw for c in plain] == [c.raw for c in completions]


def test_ctrl_c_while_the_transformers_backend_decodes_keeps_the_rows_done(tiny_backend, rows, tmp_path):
    """Ctrl-C arrives inside the decoder, after two rows of the batch ended: those two are on disk."""
    path = tmp_path / "predictions.jsonl"
    settings = DecodingSettings(max_new_tokens=10, budgets=(("level-1/api", 2), ("level-1/response", 10)))
    real = TransformersBackend.generate

    def interrupted(self, conversations, prompts, settings, on_completion=None):
        done = []

        def report(index, completion):
            on_completion(index, completion)
            done.append(index)
            if len(done) == 2:
                raise KeyboardInterrupt

        return real(self, conversations, prompts, settings, on_completion=report)

    level1 = [row for row in rows if row["level"] == 1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransformersBackend, "generate", interrupted)
        with pytest.raises(KeyboardInterrupt):
            generate_predictions(level1, tiny_backend, fmt="paper", settings=settings, batch_size=8,
                                 output_path=path, progress=False)
    saved = read_predictions(path)
    assert len(saved) == 2
    resumed = generate_predictions(level1, tiny_backend, fmt="paper", settings=settings, batch_size=8,
                                   output_path=path, progress=False)
    fresh = generate_predictions(level1, tiny_backend, fmt="paper", settings=settings, batch_size=8, progress=False)
    assert timeless(resumed) == timeless(fresh)
    ends = sorted(r["generated_tokens"] for r in fresh)
    assert sorted(r["generated_tokens"] for r in saved) == ends[:2]  # the two rows that ended first


# ------------------------------------------------------------------------------------------- resume
def test_a_resume_may_add_levels_whose_budgets_differ(data_dir, tmp_path):
    """Level 1 first, then levels 1 and 2 into the same file: the budgets (and the cap, the largest of them)
    differ as a whole, but each kept row's own budget is the same."""
    path = tmp_path / "predictions.jsonl"
    oracle = OracleBackend()
    one, two = load_rows(["level-1"], data_dir), load_rows(["level-1", "level-2"], data_dir)
    first = sized_settings(oracle, one, "paper")
    both = sized_settings(oracle, two, "paper")
    assert first.as_dict() != both.as_dict() and first.max_new_tokens != both.max_new_tokens
    generate_predictions(one[:20], oracle, fmt="paper", settings=first, output_path=path, progress=False)
    records = generate_predictions(two, oracle, fmt="paper", settings=both, output_path=path, progress=False)
    assert [r["prediction"] for r in records] == [row["expected_output"] for row in two]
    assert len(read_predictions(path)) == len(two)


def _kept(level_rows, **change):
    record = {"id": level_rows[0]["id"], "prediction": "x", "format": "paper", "model": "m",
              "level": level_rows[0]["level"], "kind": level_rows[0]["kind"],
              "engine": {"backend": "transformers", "revision": "r", "dtype": "float32", "chat_template_sha256": None},
              "decoding": DecodingSettings(max_new_tokens=600, budgets=((f"level-1/{level_rows[0]['kind']}", 84),),
                                           stop=("\n",)).as_dict()}
    for key, value in change.items():
        if key in record["engine"]:
            record["engine"] = {**record["engine"], key: value}
        else:
            record[key] = value
    return record


def test_a_real_difference_is_refused_in_one_line_naming_it(level_rows):
    path = Path("out/predictions.jsonl")
    kind = level_rows[0]["kind"]
    this_run = {"format": "paper", "model": "m",
                "engine": {"backend": "transformers", "revision": "r", "dtype": "float32", "chat_template_sha256": None},
                "decoding": DecodingSettings(max_new_tokens=700, stop=("\n",),
                                             budgets=((f"level-1/{kind}", 84), ("level-2/api", 700))).as_dict()}
    check_resumable([_kept(level_rows)], this_run, path)  # the same row budget under another cap
    legacy = _kept(level_rows)
    del legacy["engine"]  # lines written before the engine was recorded
    check_resumable([legacy], this_run, path)
    for change, named in (({"dtype": "bfloat16"}, "dtype='float32', the predictions in out/predictions.jsonl have 'bfloat16'"),
                          ({"backend": "vllm"}, "backend='transformers', the predictions"),
                          ({"chat_template_sha256": "ab"}, "chat_template_sha256=None, the predictions"),
                          ({"model": "other"}, "have 'other'"), ({"format": "chat"}, "format='paper'"),
                          ({"decoding": {**this_run["decoding"], "stop": []}}, "stop=['\\n'], the predictions"),
                          ({"decoding": DecodingSettings(max_new_tokens=50, stop=("\n",)).as_dict()},
                           f"max_new_tokens for level-1/{kind}=84, the predictions in out/predictions.jsonl have 50")):
        with pytest.raises(ResumeMismatch) as caught:
            check_resumable([_kept(level_rows, **change)], this_run, path)
        message = str(caught.value)
        assert named in message and "--overwrite" in message and len(message) < 200, message
