"""The shipped row audit: every test row once, statuses of the taxonomy, checksums of the data it was made from,
and one clear refusal for each way an audit can disagree with the data."""

from __future__ import annotations

import json

import pytest
from support.audits import copy_audit, copy_data, use_audit

import apibank
import apibank_cli
from apibank.benchmark import AUDIT_STATUSES, FULL_COUNTS, LEVELS
from apibank.data import audits
from apibank.data.audits import AuditError, load_audit
from apibank.data.configs import required_files
from apibank.data.rows import iter_rows
from apibank.data.upstream import manifest, sha256_of

GIVEN = "level-1/AddAgenda-AddMeeting-GetUserToken-level-2-2#0"  # the example row


@pytest.fixture(scope="module")
def test_ids(data_dir) -> list[str]:
    return [row["id"] for level in LEVELS for row in iter_rows(level, data_dir)]


def test_every_test_row_is_audited_once_with_a_status_and_a_reason(test_ids, data_dir):
    audit = load_audit(data_dir)
    assert len(test_ids) == 1307 == len(audit.rows) == sum(sum(cell.values()) for cell in FULL_COUNTS.values())
    assert sorted(audit.rows) == sorted(test_ids)
    for row_id in test_ids:
        record = audit.rows[row_id]
        assert record["status"] in AUDIT_STATUSES and isinstance(record["checks"], list)
        assert isinstance(record["reason"], str) and record["reason"]
        if record["status"] != "verified":  # every decision against a row quotes its evidence
            assert record["evidence"]
    assert sorted(audit.statuses) == sorted(AUDIT_STATUSES)
    assert all(audit.statuses.values())


def test_counts_and_checksums_are_those_of_the_rows_and_the_data(data_dir):
    audit = load_audit(data_dir)
    for level in LEVELS:
        statuses = [record["status"] for row_id, record in audit.rows.items() if row_id.startswith(level + "/")]
        assert audit.counts[level] == {s: statuses.count(s) for s in set(statuses)}
    tested = {path for level in LEVELS for path in required_files(level)}
    assert tested & set(audit.data_sha256)  # made from the test rows' files (and maybe others: the training set)
    for path, digest in audit.data_sha256.items():
        assert digest == manifest().entry(path).sha256
        if path in tested:
            assert digest == sha256_of((data_dir / path).read_bytes())
    meta = json.loads((audits.AUDIT_DIR / audits.AUDIT_META_FILE).read_text("utf-8"))
    assert meta["rows"] == 1307 and isinstance(meta["version"], str)


def test_audit_status_is_public_and_reads_the_file(test_ids):
    audit = load_audit()  # no data at hand: the pinned checksums
    assert apibank.audit_status(GIVEN) == audit.rows[GIVEN]["status"]
    assert {apibank.audit_status(row_id) for row_id in test_ids} <= set(AUDIT_STATUSES)
    assert "audit_status" in apibank.__all__
    with pytest.raises(AuditError, match=r"'level-1/nowhere#0' is not a test row of the audit"):
        apibank.audit_status("level-1/nowhere#0")
    with pytest.raises(AuditError, match="not a test row"):
        apibank.audit_status(None)  # type: ignore[arg-type]


def _drop_one(rows):
    return rows[1:]


def _twice(rows):
    return [*rows[:-1], rows[0]]


def _unknown_status(rows):
    rows[5]["status"] = "dubious"
    return rows


def _unknown_level(rows):
    rows[0]["id"] = "level-9/x#0"
    return rows


@pytest.mark.parametrize(("edit_rows", "edit_meta", "said"), [
    (_drop_one, None, r"audits 773 rows of level-1, the benchmark has 774: rows are missing"),
    (_twice, None, r"is audited twice"),
    (_unknown_status, None, r"status 'dubious' is none of verified, wrong-gold, underdetermined"),
    (_unknown_level, None, r"'level-9/x#0' is not a test row id"),
    (None, lambda meta: meta["counts"]["level-2"].update(verified=1), r"AUDIT.json counts .*, its rows"),
    (None, lambda meta: meta.update(rows=12), r"says 12 rows"),
    (None, lambda meta: meta["statuses"].pop("wording"), r"defines the statuses .* this apibank knows"),
    (None, lambda meta: meta["data_sha256"].update({"test-data/level-3.json": "0" * 64}),
     r"does not match the data: test-data/level-3.json from the pinned upstream commit has SHA-256 "),
    (None, lambda meta: meta["data_sha256"].update({"training-data/lv3-api-train.json": "0" * 64}),
     r"training-data/lv3-api-train.json from the pinned upstream commit has SHA-256"),
    (None, lambda meta: meta["data_sha256"].update({"test-data/level-4.json": "0" * 64}),
     r"made from test-data/level-4.json, not a file of the pinned upstream data"),
])
def test_a_damaged_audit_is_refused_in_one_line(tmp_path, edit_rows, edit_meta, said):
    folder = copy_audit(tmp_path / "audit", edit_rows=edit_rows, edit_meta=edit_meta)
    with pytest.raises(AuditError, match=said) as caught:
        load_audit(folder=folder)
    assert "\n" not in str(caught.value)


def test_local_data_that_differs_from_the_audits_is_refused(data_dir, tmp_path):
    path = "test-data/level-3.json"
    changed = copy_data(data_dir, tmp_path / "data", {path: (data_dir / path).read_bytes() + b"\n"})
    with pytest.raises(AuditError, match=rf"{path} from {changed / path} has SHA-256 .* the audit was made from"):
        load_audit(changed)
    missing = tmp_path / "partial"
    missing.mkdir()
    with pytest.raises(AuditError, match="which .*partial lacks"):
        load_audit(missing)


def test_the_cli_refuses_a_mismatched_audit_before_any_work(data_dir, tmp_path, monkeypatch, capsys):
    use_audit(monkeypatch, copy_audit(tmp_path / "audit", edit_rows=_drop_one))
    output = tmp_path / "run"
    for argv in (["evaluate", "--model", "oracle", "--levels", "3", "--output", str(output)],
                 ["agent", "--model", "oracle", "--levels", "3", "--output", str(output)]):
        assert apibank_cli.main([*argv, "--data-dir", str(data_dir)]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "rows are missing" in lines[0] and "reinstall apibank" in lines[0]
        assert not output.exists()  # nothing was generated or written


def test_training_files_pinned_by_git_blob_are_checked_where_a_copy_has_them(data_dir, tmp_path):
    path = "training-data/lv1-api-train.json"  # pinned by git blob only; large, so absent from some copies
    assert manifest().entry(path).sha256 is None
    folder = copy_audit(tmp_path / "audit", edit_meta=lambda meta: meta["data_sha256"].update({path: "0" * 64}))
    assert load_audit(folder=folder).version  # no copy to hash: its git blob is checked when it is read
    copy = copy_data(data_dir, tmp_path / "data", {path: b"[]"})
    with pytest.raises(AuditError, match=rf"{path} from {copy / path} has SHA-256"):
        load_audit(copy, folder=folder)
