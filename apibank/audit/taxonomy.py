"""The audit's statuses, what each means, and which one a row gets when several apply."""

from __future__ import annotations

from apibank.benchmark import AUDIT_STATUSES
from apibank.benchmark import AUDIT_VERIFIED as VERIFIED

AUDIT_VERSION = "1.0.0"

STATUSES = {
    VERIFIED: "Every judged value is given by the dialogue, a tool result, the tools' documentation or a stated "
              "derivation; the gold agrees with the dialogue; the verdict does not hang on free wording or on an "
              "unreproducible record; the row repeats no other row and was not found in the training data.",
    "wrong-gold": "The gold call contradicts the dialogue (a value the user stated differently, an action the user "
                  "did not ask for).",
    "underdetermined": "A value the judge compares is not given before the target (credentials never stated, a "
                       "year or time of day never said, a meeting's end never fixed), so no model can know it.",
    "not-reproducible": "The recorded result is not what a fresh execution of the gold call gives, and the tool's "
                        "own corrected check tells the two apart, so the verdict rests on which reference is used.",
    "wording": "A free-text argument the user did not dictate is compared by wording: a meaning-preserving "
               "rewording (case, a final full stop, an article) turns the gold call wrong.",
    "in-training": "The row's dialogue text is found in the published training data.",
    "duplicate": "The row repeats an earlier row (same history and target); the first copy keeps its status.",
}
# When several statuses apply, the first in this order is the row's; the others stay visible in its checks.
# Defects of the row itself come first (its gold, its information, its reference), then what only weakens
# the measurement (wording, contamination, double counting).
PRECEDENCE = tuple(status for status in AUDIT_STATUSES if status != VERIFIED) + (VERIFIED,)
