"""A sample whose judging never ends, for tests that need a TIMEOUT on any machine under any load.

The receiver check of SendEmail is patched to a regular expression that backtracks exponentially on a
run of x's (and accepts what upstream's accepts otherwise): work in the C regex engine that no limit
outlasts. The real, quadratic check takes well under a second on a fast machine, too close to a limit."""

from __future__ import annotations

import re

import pytest

ENDLESS_PREDICTION = "[SendEmail(receiver='" + "x" * 200 + "', subject='s', content='c')]"
ENDLESS_PATTERN = re.compile(r"^(?:(x+x+)+y|[a-z0-9]+[\._]?[a-z0-9]+[@]\w+[.]\w{2,3})$")


@pytest.fixture
def endless_receiver_check(monkeypatch):
    from apibank_tools.level12 import send_email

    monkeypatch.setattr(send_email, "RECEIVER_PATTERN", ENDLESS_PATTERN)
