"""Check bench/heldout16/questions.jsonl against the sixteenth held-out folder (the Slurm 22.05
documentation from slurm-wlm-doc: the guides and the man pages), without any model.

The checks of bench/heldout2/verify.py, reused from there (gold paths exist and hold an
evidence line; every page holding an evidence line is a gold path; factoid and composite
answers appear in their evidence; "absent:" terms appear in no file; at least 30
questions, unique ids, at least a third of the answerable ones paraphrased).
Exits non-zero if any check fails.

    .venv/bin/python bench/heldout16/verify.py [FOLDER]
    (default FOLDER: bench/out/heldout16/slurm-wlm-doc)
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from bench.heldout2.verify import main  # noqa: E402

if __name__ == "__main__":
    main(HERE / "questions.jsonl", ROOT / "bench/out/heldout16/slurm-wlm-doc",
         "bench/heldout16/make_folder.sh")
