"""The links half of the access benchmark (issue 45): symbolic links in the source
folder must carry no text past ``.kbaccess`` or ``.kbagentignore``.

A synthetic folder (nothing public has access rules and links): ``n`` documents in
each of ``hr/`` (``.kbaccess``: executives), ``eng/`` (engineering), ``private/``
(``.kbagentignore``), ``pub/`` (open), and ``n`` outside the folder. Every document
holds a marker word of its own (``hrmark0007``) in ordinary sentences. ``pub/`` then
gets links of every kind to the restricted, ignored and outside documents:

* file links, relative and absolute; chains of 2 to 4 links; links to links in ``hr/``,
* folder links (``pub/d_hr -> ../hr``, to ``private/``, to the outside folder, to the
  root itself), a folder link under a linked folder's target, loops, broken links,

ingested through the real Ingestor (local store, deterministic vectors), then more
links are made and applied as a watch batch names them (``FolderWatcher.apply``:
the link paths, the linked folders and paths under them), and once more as a full
re-read. Probes, as the anonymous caller and as ``engineering``: every marker the
caller may not read searched in each mode, and ``kb_grep`` / ``kb_cat`` / ``kb_glob``
over markers, link paths and targets. Restricted bytes: the bytes of every returned
hit whose text holds a marker the caller may not read, plus the bytes of every tool
output line holding one (the caller's own argument cut out first). They must be 0.
Controls: executives find every ``hr`` marker at its own path, and no caller, even
one in every group, finds a ``private`` or outside marker.
"""

from __future__ import annotations

import itertools
import os
import random
import time
from pathlib import Path
from typing import Any

from kbagent.agent.answer.citations import CitationLedger
from kbagent.agent.tools.base import ToolContext
from kbagent.agent.tools.schema import validate
from kbagent.agent.tools.toolset import registry, run_tool
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from kbagent.kb.watch import FolderWatcher
from kbagent.settings import Settings

KINDS = ("hr", "eng", "private", "outside", "pub")
EXEC = Principal("maya", frozenset({"executives"}))
EVERY = Principal("root", frozenset({"executives", "engineering", "hr"}))
CALLERS = {"anonymous": (ANONYMOUS, {"hr", "eng", "private", "outside"}),
           "engineering": (Principal("sam", frozenset({"engineering"})),
                           {"hr", "private", "outside"})}
FOLDER_LINK = {"hr": "d_hr", "eng": "d_eng", "private": "d_priv", "outside": "d_out"}
WORDS = ("budget review quarterly plan notes the team agreed to ship after testing "
         "and the numbers were checked twice by finance").split()


def marker(kind: str, i: int) -> str:
    return f"{kind}mark{i:04d}"


def text(kind: str, i: int, rnd: random.Random) -> str:
    filler = " ".join(rnd.choice(WORDS) for _ in range(30))
    return f"# {kind} note {i}\n\nThe {marker(kind, i)} figure is {i * 7919}. {filler}.\n"


def build(work: Path, n: int, seed: int = 45) -> tuple[Path, Path, dict[str, int]]:
    """The folder, the outside folder and how many links of each kind were made."""
    rnd = random.Random(seed)
    root, outside = work / "linked", work / "outside"
    for kind in KINDS:
        folder = outside if kind == "outside" else root / kind
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            (folder / f"{kind}{i:04d}.md").write_text(text(kind, i, rnd), encoding="utf-8")
    (root / ".kbaccess").write_text("hr/** executives\neng/** engineering\n", encoding="utf-8")
    (root / ".kbagentignore").write_text("private/\n", encoding="utf-8")
    made = dict.fromkeys(("file", "absolute", "chains of 2-4", "folder", "loop", "broken"), 0)
    links = root / "pub" / "links"
    links.mkdir()
    for kind in ("hr", "eng", "private", "outside"):
        for i in range(n):
            name = f"{kind}{i:04d}.md"
            target = outside / name if kind == "outside" else root / kind / name
            os.symlink(os.path.relpath(target, links), links / f"rel_{name}")
            os.symlink(target, links / f"abs_{name}")
            hops = [links / f"chain{h}_{name}" for h in range(rnd.randint(2, 4))]
            for a, b in itertools.pairwise(hops):
                os.symlink(b.name, a)
            os.symlink(os.path.relpath(target, links), hops[-1])
            made["file"] += 1
            made["absolute"] += 1
            made["chains of 2-4"] += 1
    os.symlink("hr0000.md", root / "hr" / "alias.md")  # a link inside a restricted folder
    os.symlink(root / "hr" / "alias.md", links / "to_alias.md")  # a link to that link
    for name, target in (("d_hr", "../hr"), ("d_eng", "../eng"), ("d_priv", "../private"),
                         ("d_out", str(outside)), ("d_root", ".."), ("d_self", "../pub")):
        os.symlink(target, root / "pub" / name)
        made["folder"] += 1
    os.symlink("../pub/d_hr", root / "eng" / "d_hr2")  # a folder link to a folder link
    made["folder"] += 1
    for a, b in (("loop.md", "loop.md"), ("x.md", "y.md"), ("y.md", "x.md")):
        os.symlink(b, links / a)
        made["loop"] += 1
    os.symlink("nothing.md", links / "broken.md")
    made["broken"] += 1
    made["file"] += 2
    return root, outside, made


def watch_links(root: Path, outside: Path, n: int) -> set[str]:
    """Links made after the first ingest; the paths a watcher could name for them."""
    named = set()
    later = root / "pub" / "later"
    later.mkdir()
    named.add("pub/later")
    for i in range(min(n, 20)):
        for kind in ("hr", "private"):
            os.symlink(f"../../{kind}/{kind}{i:04d}.md", later / f"{kind}{i:04d}.md")
            named.add(f"pub/later/{kind}{i:04d}.md")
        os.symlink(outside / f"outside{i:04d}.md", later / f"outside{i:04d}.md")
        named.add(f"pub/later/outside{i:04d}.md")
    os.symlink("../hr", root / "pub" / "d_hr_later")
    named |= {"pub/d_hr_later", "pub/d_hr_later/hr0001.md", "pub/d_hr/hr0002.md",
              "pub/d_priv/private0003.md", "pub/d_out/outside0004.md"}
    return named


def forbidden_bytes(chunk: str, forbidden: set[str], typed: str = "") -> int:
    """Bytes of the lines of ``chunk`` that hold a marker of a ``forbidden`` kind."""
    if typed:
        chunk = chunk.replace(typed, "")
    bad = 0
    for line in chunk.splitlines():
        if any(f"{kind}mark" in line for kind in forbidden):
            bad += len(line.encode())
    return bad


def probe(kb: KnowledgeBase, n: int, embedder: Any) -> dict[str, Any]:
    searcher = HybridSearcher([kb])
    tools = registry("knowledge")
    paths = kb.store.paths()
    out: dict[str, Any] = {"documents": len(paths),
                           "link_paths_in_kb": sum(1 for p in paths if "/links/" in p or
                                                   p.startswith("pub/d_") or
                                                   p.startswith("pub/later"))}
    for label, (who, forbidden) in CALLERS.items():
        hit_bytes = tool_bytes = queries = calls = 0
        ctx = ToolContext({kb.name: kb}, searcher, CitationLedger(100_000), principal=who)
        for kind in sorted(forbidden):
            for i in range(n):
                word = marker(kind, i)
                vec = embedder.encode([text(kind, i, random.Random(0))])[0]
                for mode in ("bm25", "vector", "hybrid"):
                    res = searcher.search(f"{word} figure", k=10, mode=mode, principal=who,
                                          query_vectors={kb.embedding_model: vec})
                    queries += 1
                    hit_bytes += sum(len(h.text.encode()) for h in res.hits
                                     if forbidden_bytes(h.text, forbidden))
                name = f"{kind}{i:04d}.md"
                for tool, args in (("kb_grep", {"pattern": word}),
                                   ("kb_cat", {"path": f"pub/links/rel_{name}"}),
                                   ("kb_cat", {"path": f"pub/{FOLDER_LINK[kind]}/{name}"}),
                                   ("kb_cat", {"path": f"{kind}/{name}"})):
                    res_t, _ = run_tool(tools[tool], ctx,
                                        validate(tool, tools[tool].parameters, args))
                    calls += 1
                    tool_bytes += forbidden_bytes(res_t.text, forbidden,
                                                  typed=str(next(iter(args.values()))))
        for pattern in ("pub/**", "**/*.md"):
            res_t, _ = run_tool(tools["kb_glob"], ctx, validate(
                "kb_glob", tools["kb_glob"].parameters, {"pattern": pattern}))
            calls += 1
            tool_bytes += sum(len(ln.encode()) for ln in res_t.text.splitlines()
                              if "/links/" in ln or "pub/d_" in ln)
        out[label] = {"queries": queries, "tool_calls": calls,
                      "restricted_bytes_search": hit_bytes, "restricted_bytes_tools": tool_bytes}
    found = sum(1 for i in range(n) if any(
        h.path == f"hr/hr{i:04d}.md" for h in searcher.search(
            marker("hr", i), k=5, mode="bm25", principal=EXEC).hits))
    never = sum(len(h.text.encode()) for kind in ("private", "outside") for i in range(n)
                for h in searcher.search(marker(kind, i), k=5, mode="bm25",
                                         principal=EVERY).hits)
    out["control_executive_finds_hr"] = f"{found}/{n}"
    out["ignored_or_outside_bytes_to_every_group"] = never
    return out


def run(work: Path, embedder: Any, n: int = 60) -> dict[str, Any]:
    settings = Settings.load(home=work / "links_home")
    root, outside, made = build(work, n)
    started = time.perf_counter()
    ingestor = Ingestor(settings, "links", embedder=embedder)
    rep = ingestor.run(root)
    result: dict[str, Any] = {"links_made": made, "ingest_seconds":
                              round(time.perf_counter() - started, 1),
                              "links_reported_skipped": sum(
                                  1 for f in rep.files if f.status == "skipped"
                                  and f.reason.startswith("symbolic link"))}
    kb = KnowledgeBase(settings, "links")
    try:
        result["after_ingest"] = probe(kb, n, embedder)
        named = watch_links(root, outside, n)
        watcher = FolderWatcher(ingestor, root)
        batch = watcher.apply(named, False)
        result["watch_batch_links_reported"] = sum(1 for f in batch.notes
                                                   if f.reason.startswith("symbolic link"))
        watcher.apply(set(), True)  # a changed .kbaccess: the whole folder read again
        kb.refresh()
        result["after_watch"] = probe(kb, n, embedder)
    finally:
        kb.close()
    return result


def print_links(r: dict[str, Any]) -> None:
    made = ", ".join(f"{v} {k}" for k, v in r["links_made"].items())
    print(f"\nlinks: made {made}; reported skipped by ingest {r['links_reported_skipped']}, "
          f"by the watch batch {r['watch_batch_links_reported']}")
    for phase in ("after_ingest", "after_watch"):
        x = r[phase]
        print(f"  {phase}: {x['documents']} documents, link paths in the KB "
              f"{x['link_paths_in_kb']}; executives find hr markers "
              f"{x['control_executive_finds_hr']}; ignored/outside bytes to every group "
              f"{x['ignored_or_outside_bytes_to_every_group']}")
        for label in CALLERS:
            c = x[label]
            print(f"    {label:<12} {c['queries']} searches, {c['tool_calls']} tool calls: "
                  f"restricted bytes {c['restricted_bytes_search']} (search) + "
                  f"{c['restricted_bytes_tools']} (tools)")
