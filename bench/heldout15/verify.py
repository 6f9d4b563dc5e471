"""Check bench/heldout15/questions.jsonl against the fifteenth held-out folder (the Buildbot 3.7
user documentation from buildbot-doc: the tutorial and the manual), without any model.

The checks of bench/heldout2/verify.py, reused from there (gold paths exist and hold an
evidence line; every page holding an evidence line is a gold path; factoid and composite
answers appear in their evidence; "absent:" terms appear in no file; at least 30
questions, unique ids, at least a third of the answerable ones paraphrased).
Exits non-zero if any check fails.

    .venv/bin/python bench/heldout15/verify.py [FOLDER]
    (default FOLDER: bench/out/heldout15/buildbot-doc)
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from bench.heldout2.verify import main  # noqa: E402

if __name__ == "__main__":
    main(HERE / "questions.jsonl", ROOT / "bench/out/heldout15/buildbot-doc",
         "bench/heldout15/make_folder.sh")
