"""``python -m apibank.evals.lm_eval``: the folder to give lm-eval's ``--include_path``."""

from __future__ import annotations

import sys

from apibank.errors import UserError
from apibank.evals.lm_eval import TASK_FOLDER, check_installed


def main() -> int:
    try:
        check_installed()
    except UserError as error:
        print(f"python -m apibank.evals.lm_eval: error: {error}", file=sys.stderr)
        return 2
    print(TASK_FOLDER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
