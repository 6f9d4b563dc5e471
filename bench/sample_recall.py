"""Does the sample KB's retrieval stay as good when it gains Office files (issue 24)?

Builds two KBs side by side in one run: sample_kb/ without its .docx/.pptx/.xlsx and
sample_kb/ whole, then runs every question of tests/data/sample_questions.jsonl that
has gold paths through hybrid search (top 5) on both, and prints recall@5 (a gold
path among the hits) and MRR for the questions answerable before (q01-q47) and for
the new ones (q48-q52, answered only by tables and slides).

    PYTHONPATH=$PWD python bench/sample_recall.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbagent.kb.embedder import load_embedder  # noqa: E402
from kbagent.kb.ingest import Ingestor  # noqa: E402
from kbagent.kb.knowledge_base import KnowledgeBase  # noqa: E402
from kbagent.kb.search import HybridSearcher  # noqa: E402
from kbagent.settings import Settings  # noqa: E402

OFFICE = (".docx", ".pptx", ".xlsx")


def main() -> None:
    questions = [json.loads(x) for x in (ROOT / "tests/data/sample_questions.jsonl")
                 .read_text().splitlines() if x.strip()]
    questions = [q for q in questions if q["gold_paths"]]
    embedder = load_embedder("bundled")
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.load(home=Path(tmp) / "home")
        without = Path(tmp) / "without"
        shutil.copytree(ROOT / "sample_kb", without)
        for p in without.rglob("*"):
            if p.suffix in OFFICE:
                p.unlink()
        Ingestor(settings, "before", embedder=embedder).run(without)
        Ingestor(settings, "after", embedder=embedder).run(ROOT / "sample_kb")
        rows = {}
        for name in ("before", "after"):
            searcher = HybridSearcher([KnowledgeBase(settings, name)])
            for q in questions:
                hits = [h.path for h in searcher.search(q["question"], k=5).hits]
                rank = next((i for i, p in enumerate(hits, 1) if p in q["gold_paths"]), 0)
                rows[(name, q["id"])] = rank
    print(f"{'questions':<22} {'KB':<24} {'recall@5':>8} {'MRR':>6}")
    for label, ids in (("q01-q47 (had gold)", [q["id"] for q in questions if q["id"] <= "q47"]),
                       ("q48-q52 (new)", [q["id"] for q in questions if q["id"] > "q47"])):
        for name, what in (("before", "without Office files"), ("after", "with them")):
            ranks = [rows[(name, i)] for i in ids]
            recall = sum(1 for r in ranks if r) / len(ranks)
            mrr = sum(1 / r for r in ranks if r) / len(ranks)
            print(f"{label:<22} {what:<24} {recall:>8.3f} {mrr:>6.3f}")
    changed = [i for (n, i), r in rows.items() if n == "before" and rows[("after", i)] != r]
    print("ranks changed:", ", ".join(f"{i} {rows[('before', i)]}->{rows[('after', i)]}"
                                      for i in changed) or "none")


if __name__ == "__main__":
    main()
