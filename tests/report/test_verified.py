"""The verified block of a run's results: its rows only, every other row counted by status, nothing dropped."""

from __future__ import annotations

from apibank.data.audits import Audit
from apibank.report.verified import NOT_AUDITED, markdown_section, verified_block


def _audit(statuses: dict[str, str]) -> Audit:
    return Audit("test", {}, {}, {}, {row_id: {"id": row_id, "status": status} for row_id, status in statuses.items()},
                 "0" * 64)


def _detail(row_id: str, kind: str, verdict: bool | None = None, score: float | None = None) -> dict:
    level = int(row_id.split("/")[0][-1])
    return {"id": row_id, "protocol": "corrected", "level": level, "kind": kind, "verdict": verdict, "score": score,
            "score_rougescore": score, "category": None if verdict else "INPUT_MISMATCH"}


def test_only_verified_rows_count_and_the_others_are_named():
    details = [_detail("level-3/0#0", "api", True), _detail("level-3/0#1", "api", False),
               _detail("level-3/1#0", "api", True), _detail("level-3/0#response", "response", score=0.5),
               _detail("level-3/1#response", "response", score=1.0), _detail("level-3/2#0", "api", False)]
    audit = _audit({"level-3/0#0": "verified", "level-3/0#1": "wrong-gold", "level-3/1#0": "verified",
                    "level-3/0#response": "wording", "level-3/1#response": "verified"})
    block = verified_block(details, audit)
    assert block["audit"]["version"] == "test" and block["status"] == "verified"
    assert block["counts"] == {"level-3": {"api": 2, "response": 1}}
    # level-3/2#0 has no entry: counted apart, never taken as verified
    assert block["excluded"] == {"level-3": {NOT_AUDITED: 1, "wording": 1, "wrong-gold": 1}}
    level = block["scores"]["corrected"]["level-3"]
    assert (level["api"]["correct"], level["api"]["total"], level["api"]["n"], level["api"]["clusters"]) == (2, 2, 2, 2)
    assert level["dialogues"] == {**level["dialogues"], "correct": 2, "total": 2}
    assert (level["response"]["rouge_l"], level["response"]["count"]) == (1.0, 1)
    assert level["errors"] == {} and "error_types" in level
    section = "\n".join(markdown_section(block, ["level-3"]))
    assert "## Verified subset" in section and "(2/2)" in section and "wrong-gold 1" in section
    assert markdown_section(None, ["level-3"]) == []
