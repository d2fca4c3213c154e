"""The audit of the test rows: the shipped file covers every row with quoted evidence, a fresh build from the
checks and the decisions gives the committed files byte for byte, and each check flags a row it must."""

from __future__ import annotations

import copy
import json
import re

import pytest

from apibank.audit.build import (
    DECISIONS_FILE, EVIDENCE_SEPARATOR, AuditError, build, data_checksums, environment, load_rows, read_decisions,
    records, render, row_text, run_checks,
)
from apibank.data.audits import AUDIT_DIR, AUDIT_META_FILE as SUMMARY_FILE, AUDIT_ROWS_FILE as AUDIT_FILE
from apibank.audit.checks import CHECKS
from apibank.audit.taxonomy import PRECEDENCE, STATUSES, VERIFIED
from apibank.audit.tracing import row_context, stated_dates, stated_times, trace_value

CREDENTIALS_ROW = "level-1/AddAgenda-AddMeeting-GetUserToken-level-2-2#0"


def _audit() -> list[dict]:
    return [json.loads(line) for line in (AUDIT_DIR / AUDIT_FILE).read_text("utf-8").splitlines()]


@pytest.fixture(scope="module")
def rows(data_dir):
    return load_rows(data_dir)


@pytest.fixture(scope="module")
def flags(rows, data_dir):
    return run_checks(rows, environment(data_dir))


def test_the_file_has_one_record_per_test_row_in_row_order(rows):
    audit = _audit()
    assert [record["id"] for record in audit] == [row.id for row in rows]
    assert len(audit) == 1307
    assert {record["status"] for record in audit} <= set(STATUSES)
    assert all(set(record) == {"id", "status", "checks", "reason", "evidence"} for record in audit)


def test_every_status_but_verified_quotes_its_evidence_from_the_row(rows):
    by_id = {row.id: row for row in rows}
    for record in _audit():
        assert record["reason"].strip(), record["id"]
        if record["status"] == VERIFIED:
            continue
        assert record["evidence"].strip(), record["id"]
        text = row_text(by_id[record["id"]].row)
        assert all(part in text for part in record["evidence"].split(EVIDENCE_SEPARATOR)), record["id"]


def test_the_summary_counts_the_file_and_pins_the_data():
    audit, summary = _audit(), json.loads((AUDIT_DIR / SUMMARY_FILE).read_text("utf-8"))
    assert summary["rows"] == len(audit) == sum(sum(by.values()) for by in summary["counts"].values())
    for level, by_status in summary["counts"].items():
        for status, count in by_status.items():
            assert count == sum(r["status"] == status and r["id"].startswith(level + "/") for r in audit)
    assert set(summary) == {"version", "statuses", "data_sha256", "counts", "rows"}
    assert summary["statuses"] == STATUSES and list(summary["statuses"]) == list(PRECEDENCE)
    assert summary["data_sha256"] == data_checksums()


def test_the_pinned_checksums_are_those_of_the_shared_copy(data_dir):
    sums = dict(reversed(line.split(maxsplit=1)) for line in (data_dir / "SHA256SUMS").read_text().splitlines())
    pinned = json.loads((AUDIT_DIR / SUMMARY_FILE).read_text("utf-8"))["data_sha256"]
    assert len(pinned) == 272  # 264 dialogue files of levels 1-2 and 8 test-data files
    assert all(sums["./" + path] == sha for path, sha in pinned.items())


def test_a_fresh_build_gives_the_committed_files(data_dir):
    audit, summary = build(data_dir)
    assert render(audit, summary) == ((AUDIT_DIR / AUDIT_FILE).read_text("utf-8"),
                                      (AUDIT_DIR / SUMMARY_FILE).read_text("utf-8"))


def test_the_command_compares_a_fresh_build_with_the_committed_files(data_dir, capsys):
    from apibank.audit.__main__ import main

    assert main(["build", "--data-dir", str(data_dir), "--check"]) == 0
    assert capsys.readouterr().out == "the audit files match a fresh build (1307 rows)\n"


def test_a_status_follows_the_precedence_over_its_other_checks():
    # a row that is underdetermined and also repeats another keeps the more fundamental status
    record = next(r for r in _audit() if r["id"] == "level-1/AddAgenda-AddMeeting-GetUserToken-level-2-3#2")
    assert record["status"] == "underdetermined"
    assert [flag["check"] for flag in record["checks"]] == ["untraced_argument", "duplicate"]


# ------------------------------------------------------------------------------ each check
def test_untraced_argument_flags_credentials_never_given(flags):
    flag = next(f for f in flags[CREDENTIALS_ROW] if f["check"] == "untraced_argument")
    assert flag["detail"] == ["username='JohnDoe'", "password='pass123'"]
    # "tomorrow at 2pm" after "Today is 2021-09-27" is a stated derivation
    assert not any(f["check"] == "untraced_argument" for f in flags["level-1/AddAgenda-level-1-1#2"])
    # "October 26th, at 9am" takes its year from the instruction: "The current year is 2023."
    assert not any(f["check"] == "untraced_argument" for f in flags["level-1/AddAgenda-AddMeeting-GetUserToken-level-2-2#1"])
    # a meeting's end that nobody states is not traced
    flag = next(f for f in flags["level-1/AddAgenda-AddMeeting-GetUserToken-level-2-3#1"] if f["check"] == "untraced_argument")
    assert flag["detail"] == ["end_time='2023-11-12 16:00:00'"]


def test_tool_intent_flags_a_call_the_user_never_asked_for(flags):
    # "can you remind me to pay bills on March 20th at 12 PM?" -- the gold deletes a reminder
    flag = next(f for f in flags["level-2/DeleteReminder-level-3-1#4"] if f["check"] == "tool_intent")
    assert flag["detail"] == {"tool": "DeleteReminder", "action": "Delete"}
    flagged = sorted(row_id for row_id, found in flags.items() if any(f["check"] == "tool_intent" for f in found))
    assert flagged == ["level-2/DeleteReminder-level-3-1#4", "level-2/QueryReminder-level-3-2#1",
                       "level-2/QueryReminder-level-3-2#2"]


def test_response_untraced_number_flags_an_id_no_tool_returned(flags):
    # the registration returned "43744231"; the gold answer says "your appointment ID is 12345"
    flag = next(f for f in flags["level-1/AppointmentRegistration-level-1-1#1"] if f["check"] == "response_untraced_number")
    assert flag["detail"] == ["12345"]
    # "The result is 77.3333." after a calculator result of 77.33333333333333 is a rounding
    assert not any(f["check"] == "response_untraced_number" for f in flags["level-2/Calculator-level-3-1#3"])


def test_wording_sensitive_flags_a_reworded_question(flags):
    flag = next(f for f in flags["level-1/DocumentQA-level-1-1#4"] if f["check"] == "wording_sensitive")
    assert "'What is customer support like for this software?' judged wrong" in " ".join(flag["detail"])
    # the EmailReminder check drops the free-text content, so rewording it changes nothing
    assert not any(f["check"] == "wording_sensitive" for f in flags["level-3/0#3"])


def test_not_reproduced_says_whether_the_verdict_depends_on_the_record(flags):
    scene = next(f for f in flags["level-1/QueryScene-level-1-1#0"] if f["check"] == "not_reproduced")
    assert scene["detail"]["verdict_depends"] is True
    # a random appointment id differs, but the corrected check ignores it
    appointment = next(f for f in flags["level-1/AppointmentRegistration-level-1-1#0"] if f["check"] == "not_reproduced")
    assert appointment["detail"]["verdict_depends"] is False
    level12 = [row_id for row_id, found in flags.items() if row_id.startswith(("level-1/", "level-2/"))
               and any(f["check"] == "not_reproduced" for f in found)]
    assert len(level12) == 64  # the 64 of 508 level-1/2 gold calls apibank replay does not reproduce


def test_duplicate_names_the_first_copy(flags):
    flag = next(f for f in flags["level-2/DeleteAccount-level-3-3#0"] if f["check"] == "duplicate")
    assert flag == {"check": "duplicate", "result": "exact", "detail": {"of": "level-2/DeleteAccount-level-3-2#0"}}


def test_training_overlap_finds_a_requirement_inside_the_training_data(flags):
    flag = next(f for f in flags["level-3/40#0"] if f["check"] == "training_overlap")
    assert flag["result"] == "exact"
    assert not any(f["check"] == "training_overlap" for f in flags["level-3/0#0"])


def test_the_checks_are_registered_once_in_order():
    assert list(CHECKS) == ["untraced_argument", "tool_intent", "response_untraced_number", "wording_sensitive",
                            "not_reproduced", "duplicate", "training_overlap"]


# ------------------------------------------------------------------------------ tracing
def test_dates_and_times_are_read_in_the_usual_forms():
    assert stated_dates("on november 12th, 2023 at 3 pm") == [(2023, 11, 12)]
    assert (None, 9, 21) in stated_dates("on the 21th of september")
    assert stated_dates("today is 2023.6.8, an alarm on 7-15") == [(2023, 6, 8), (None, 7, 15)]
    assert stated_dates("from 2023-03-01 to 3/31") == [(2023, 3, 1), (None, 3, 31)]
    assert {(15, 0), (9, 30), (12, 0)} <= stated_times("at 3 pm, 9:30 a.m. or noon")


def test_a_number_is_traced_by_value_and_sign(rows):
    row = next(r for r in rows if r.id == "level-3/15#3").row
    context = row_context(row)
    assert trace_value("40.7128", context) == "number stated"
    assert trace_value("-40.7128", context) is None
    assert trace_value(1000, context) == "number stated"  # "within 1km", asked in metres


# ------------------------------------------------------------------------------ refusals
def test_a_flagged_row_without_a_decision_is_refused(rows, flags):
    decisions = read_decisions(AUDIT_DIR / DECISIONS_FILE)
    del decisions[CREDENTIALS_ROW]
    with pytest.raises(AuditError, match=r"1 flagged rows have no decision, e\.g\. \['level-1/AddAgenda"):
        records(rows, flags, decisions)


def test_evidence_the_row_does_not_say_is_refused(rows, flags):
    decisions = copy.deepcopy(read_decisions(AUDIT_DIR / DECISIONS_FILE))
    decisions[CREDENTIALS_ROW]["evidence"] = "My password is pass123."
    with pytest.raises(AuditError, match=re.escape(f"{CREDENTIALS_ROW}: the evidence 'My password is pass123.' is not quoted")):
        records(rows, flags, decisions)


def test_an_unknown_status_is_refused(tmp_path):
    path = tmp_path / "decisions.jsonl"
    path.write_text(json.dumps({"id": CREDENTIALS_ROW, "status": "fine", "reason": "r", "evidence": ""}) + "\n")
    with pytest.raises(AuditError, match="unknown status 'fine'"):
        read_decisions(path)
