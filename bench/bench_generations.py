"""Disk use of a KB over repeated rebuilds, and what checking and repairing its
indexes costs (issue 20, items 6 and 11).

Run from the repository root (any kbagent tree: run it with ``PYTHONPATH`` at an
older commit's tree to get that commit's row side by side)::

    PYTHONPATH=$PWD .venv/bin/python bench/bench_generations.py [--rebuilds 3]

1. disk     the KB folder's size and generation folders after a first ingest of
            sample_kb and after each ``--rebuild``; then with a reader holding the
            live generation across a rebuild, and after it closes and a plain
            ingest runs (old generations are collected once no reader holds them).
2. repair   (trees that have kb/repair.py) a plain ingest with nothing changed,
            split into the index check alone; a corrupted BM25 segment repaired by
            a plain ingest against the ``--rebuild`` the user ran before; a
            corrupted vector index repaired (re-embedded) against a ``--rebuild``
            of the same damage (which re-embeds too: its vector salvage needs a
            sound index).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dir_size(path: Path) -> int:
    """Bytes on disk of the files under ``path``, each inode once (tantivy segments
    are hard-linked between generations)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for base, _, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(base, f))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def gens(kb: Path) -> list[str]:
    return sorted(p.name for p in kb.iterdir() if p.name.startswith(("gen-", ".gen-")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rebuilds", type=int, default=3)
    ap.add_argument("--source", type=Path, default=ROOT / "sample_kb")
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="kbagent-bench-gen-"))
    os.environ["KBAGENT_HOME"] = str(home)
    import kbagent
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase, current_generation
    from kbagent.settings import Settings

    settings = Settings.load()
    embedder = load_embedder("bundled")
    kb = settings.kbs_dir / "sample"
    commit = subprocess.run(["git", "-C", str(Path(kbagent.__file__).parent), "rev-parse",
                             "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"kbagent tree {Path(kbagent.__file__).parent.parent} (commit {commit})")

    def ingest(rebuild: bool = False) -> float:
        t0 = time.perf_counter()
        Ingestor(settings, "sample", embedder=embedder).run(args.source, rebuild=rebuild)
        return time.perf_counter() - t0

    def row(label: str) -> None:
        g = gens(kb)
        print(f"| {label} | {dir_size(kb) / 1e6:.2f} MB | {len(g)} | {', '.join(g)} |")

    print("\n| step | KB folder size | generation folders | names |\n|---|---|---|---|")
    ingest()
    row("first ingest")
    first = dir_size(kb)
    for i in range(args.rebuilds):
        ingest(rebuild=True)
        row(f"after --rebuild {i + 1}")
    last = dir_size(kb)
    reader = KnowledgeBase(settings, "sample")
    ingest(rebuild=True)
    row("--rebuild while a reader holds the live generation")
    reader.close()
    ingest()
    row("reader closed, then a plain ingest")
    print(f"\nsize after {args.rebuilds} rebuilds / after the first ingest: "
          f"{last / first:.2f}x")

    try:
        from kbagent.kb.repair import check_indexes
    except ImportError:
        print("\n(no kb/repair.py in this tree: repair section skipped)")
        return
    from kbagent.kb.store import Store

    def live() -> Path:
        return kb / str(current_generation(kb))

    def best(fn, n: int = 3) -> float:
        return min(fn() for _ in range(n))

    def check_only() -> float:
        import json

        store = Store(live() / "kb.sqlite", readonly=True)
        manifest = json.loads((live() / "manifest.json").read_text())
        t0 = time.perf_counter()
        assert check_indexes(live(), manifest, store) == {}
        store.close()
        return time.perf_counter() - t0

    def break_bm25() -> None:
        for f in (live() / "tantivy").glob("*.idx"):
            data = f.read_bytes()
            f.unlink()
            f.write_bytes(data[: len(data) // 2])

    def break_vectors() -> None:
        f = live() / "vectors.usearch"
        f.write_bytes(f.read_bytes()[:-1000])

    print("\n| operation | seconds (best of 3) |\n|---|---|")
    print(f"| plain ingest, nothing changed (scan + check) | {best(ingest):.3f} |")
    print(f"| index check alone | {best(check_only):.4f} |")
    rebuild_s = best(lambda: ingest(rebuild=True))
    print(f"| --rebuild (re-extract, vectors salvaged) | {rebuild_s:.3f} |")

    def repaired(breaker) -> float:
        breaker()
        return ingest()

    bm25_s = best(lambda: repaired(break_bm25))
    print(f"| plain ingest repairing a truncated BM25 segment | {bm25_s:.3f} |")
    # vectors live only in the usearch file: both ways embed every chunk again (one run)
    vec_s = repaired(break_vectors)
    print(f"| plain ingest repairing a truncated vector index (re-embeds; 1 run) | "
          f"{vec_s:.3f} |")
    break_vectors()
    vec_rebuild_s = ingest(rebuild=True)
    print(f"| --rebuild after a truncated vector index (re-embeds; 1 run) | "
          f"{vec_rebuild_s:.3f} |")
    print(f"\nBM25 repair / --rebuild: {bm25_s / rebuild_s:.2f}x; "
          f"vector repair / --rebuild of the same damage: {vec_s / vec_rebuild_s:.2f}x")
    row("after all of it")


if __name__ == "__main__":
    main()
