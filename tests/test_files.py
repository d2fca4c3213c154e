"""The one JSON-lines writer and reader (apibank.files): what a resumed run keeps, what is refused with the
way out, and a write the system refuses (a full disk) named with its file and cut back to whole lines."""

from __future__ import annotations

import json
import os

import pytest

from apibank.files import (
    JsonLinesAppender, JsonLinesError, OutputWriteError, read_json_lines, read_trajectories, resume_json_lines,
)
from apibank.generate.predictions import PredictionsFileError, read_predictions, repair

RECORDS = [{"episode": f"e{i}", "level": "level-3", "setting": "all-tools", "trial": 0, "verdict": {"success": True}}
           for i in range(3)]


def _lines(records) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


@pytest.mark.parametrize("reader", ["predictions", "trajectories"])
def test_a_torn_last_line_is_cut_off_on_resume_for_both_logs(tmp_path, reader):
    path = tmp_path / "log.jsonl"
    records = [{"id": f"r{i}", "prediction": "x"} for i in range(3)] if reader == "predictions" else RECORDS
    path.write_text(_lines(records[:2]) + json.dumps(records[2])[:20], encoding="utf-8")
    read = read_predictions if reader == "predictions" else read_trajectories
    with pytest.raises(JsonLinesError, match=r"log.jsonl:3: a torn last line \(an interrupted write\)"):
        read(path)
    kept = repair(path) if reader == "predictions" else read_trajectories(path, resume=True)
    assert kept == records[:2]
    assert path.read_text(encoding="utf-8") == _lines(records[:2])  # the next line is appended after whole ones
    with JsonLinesAppender(path) as log:
        log.write(records[2:])
    assert read(path) == records


def test_a_last_line_without_its_newline_gets_one_before_the_run_appends(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    path.write_text(_lines(RECORDS[:2]).rstrip("\n"), encoding="utf-8")  # whole, but its newline never came
    assert read_trajectories(path, resume=True) == RECORDS[:2]
    with JsonLinesAppender(path) as log:
        log.write(RECORDS[2:])
    assert read_trajectories(path) == RECORDS


@pytest.mark.parametrize("reader, way_out", [
    ("predictions", "keep one line per id"),
    ("trajectories", "keep one line per episode and trial"),
])
def test_duplicates_are_refused_naming_the_file_the_lines_and_the_way_out(tmp_path, reader, way_out):
    path = tmp_path / "log.jsonl"
    records = [{"id": "a", "prediction": "x"}, {"id": "b", "prediction": "y"}] if reader == "predictions" else RECORDS[:2]
    path.write_text(_lines([*records, records[0]]), encoding="utf-8")
    read = read_predictions if reader == "predictions" else read_trajectories
    with pytest.raises(JsonLinesError, match=rf"log.jsonl:3: duplicate .* \(first at line 1\); {way_out}") as caught:
        read(path)
    assert "\n" not in str(caught.value)


def test_a_line_that_is_not_json_gives_the_reason(tmp_path):
    path = tmp_path / "details.jsonl"
    path.write_text('{"a": 1}\n{"a": 1,, "b": 2}\n{"a": 3}\n', encoding="utf-8")
    with pytest.raises(JsonLinesError, match=r"details.jsonl:2: not a JSON line \(Expecting property name enclosed "
                                             r"in double quotes at column 9\)"):
        read_json_lines(path)


def test_text_that_is_not_utf8_names_the_file_and_line(tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_bytes(b'{"id": "a", "prediction": "x"}\n{"id": "b", "prediction": "\xff"}\n')
    with pytest.raises(PredictionsFileError, match=r"predictions.jsonl:2: not UTF-8 text \(byte 0xff at offset 58\); the file must be written as UTF-8"):
        read_predictions(path)


def test_a_refused_write_names_the_file_and_keeps_the_lines_before(tmp_path):
    # /dev/full refuses every write with ENOSPC, as a full disk does
    path = tmp_path / "predictions.jsonl"
    path.symlink_to("/dev/full")
    log = JsonLinesAppender(path)
    with pytest.raises(OutputWriteError, match=rf"^{path}: cannot write \(No space left on device\); every whole line "
                                               "written before is kept; free some space, then run the same command "
                                               "again to resume$"):
        log.write([{"id": "a", "prediction": "x"}])
    log.close()


def test_a_refused_atomic_write_names_the_file_and_leaves_the_old_one(tmp_path, monkeypatch):
    from apibank.files import write_json

    path = tmp_path / "results.json"
    write_json(path, {"old": True})

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputWriteError, match=rf"^{path}: cannot write \(No space left on device\); the file is as "
                                               "it was before"):
        write_json(path, {"new": True})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left behind


def test_resume_of_a_missing_file_keeps_nothing(tmp_path):
    assert resume_json_lines(tmp_path / "absent.jsonl") == []
