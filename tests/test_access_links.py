"""Symbolic links never carry text past access or ignore rules (issue 45, item 1).

A link inside the source folder used to be read at its own path: ``pub/l.md -> ../hr/s.md``
published the text ``.kbaccess`` restricts to executives, and a link into an ignored
folder published what ``.kbagentignore`` keeps out. Links are now never followed (file
or folder, inside or outside, chains and loops): each is reported ``skipped`` with
where it leads, and the target, when inside, is ingested at its own path under its own
rules. Checked through the real CLI (local store and PostgreSQL), watch mode, the
agent's tools and the documents a server lists as resources."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli import app
from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.views import FileViews
from kbagent.kb.walker import read_source, walk, walk_named

runner = CliRunner()
ENGINEERING = Principal("sam", frozenset({"engineering"}))
EXECUTIVES = Principal("maya", frozenset({"executives"}))
# one made-up word per place a text lives: what each caller may find is known exactly
HR, ENG, PRIVATE, OUTSIDE = "zorblatt", "quillfeather", "grumblewick", "vellumdrake"
LOOPS = {"loop.md": "loop.md", "a.md": "b.md", "b.md": "a.md", "up": "..",
         "broken.md": "nothing.md"}  # links that lead nowhere (an older ingest crashed on them)
LINK_PATHS = {"pub/l.md", "pub/abs.md", "pub/c1.md", "pub/c2.md", "pub/ign.md", "pub/eng.md",
              "pub/out.md", "pub/hrdir", "pub/outdir", "pub/privdir"} | {f"pub/{n}" for n in LOOPS}


def linked_folder(tmp_path: Path, loops: bool = True) -> Path:
    """A source folder whose ``pub/`` holds every kind of link to restricted, ignored
    and outside text, beside one open document (and, with ``loops``, links that lead
    nowhere)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text(f"# Outside\n\nThe {OUTSIDE} ledger.\n", encoding="utf-8")
    root = tmp_path / "D"
    for rel, text in {
        ".kbaccess": "hr/** executives\neng/** engineering\n",
        ".kbagentignore": "private/\n",
        "hr/s.md": f"# Pay\n\nThe {HR} bonus pool is 424242 dollars.\n",
        "eng/e.md": f"# Build\n\nThe {ENG} build runs nightly.\n",
        "private/p.md": f"# Draft\n\nThe {PRIVATE} draft is not for anyone.\n",
        "pub/open.md": "# Open\n\nThe cafeteria opens at eight.\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    pub = root / "pub"
    links = {"l.md": "../hr/s.md", "abs.md": str(root / "hr" / "s.md"),  # relative, absolute
             "c1.md": "c2.md", "c2.md": "../hr/s.md",  # a chain
             "ign.md": "../private/p.md", "eng.md": "../eng/e.md", "out.md": str(outside / "o.md"),
             "hrdir": "../hr", "outdir": str(outside), "privdir": "../private",  # folders
             **(LOOPS if loops else {})}
    for name, target in links.items():
        os.symlink(target, pub / name)
    return root


def test_the_walker_follows_no_link_and_names_each_with_where_it_leads(tmp_path):
    root = linked_folder(tmp_path)
    skipped: list[tuple[str, str]] = []
    assert [f.path for f in walk(root, skipped)] == ["eng/e.md", "hr/s.md", "pub/open.md"]
    why = dict(skipped)
    assert set(why) == LINK_PATHS
    for path in ("pub/l.md", "pub/abs.md", "pub/c1.md", "pub/c2.md"):
        assert why[path].startswith("symbolic link to hr/s.md: not followed (the target is "
                                    "read at its own path, under its own access and ignore"), path
    assert why["pub/hrdir"].startswith("symbolic link to hr: not followed")
    assert why["pub/up"].startswith("symbolic link to the source folder: not followed")
    for path in ("pub/out.md", "pub/outdir"):
        assert why[path] == "symbolic link to outside the source folder: not followed"
    for path in ("pub/loop.md", "pub/a.md", "pub/b.md", "pub/broken.md"):
        assert why[path].startswith("symbolic link that leads nowhere"), path
    # an ignored link is ignored like any file: not even named
    (root / "pub" / ".kbagentignore").write_text("l.md\n", encoding="utf-8")
    skipped.clear()
    list(walk(root, skipped))
    assert "pub/l.md" not in dict(skipped) and "pub/abs.md" in dict(skipped)


def cli_search(word: str, *who: str) -> list[dict]:
    res = runner.invoke(app, ["search", word, "--kb", "k", "--mode", "bm25", "--json", *who])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def check_cli_kb() -> None:
    """What each caller finds of each secret word through ``kbagent search``."""
    for who in ([], ["--groups", "engineering"]):
        for word in (HR, PRIVATE, OUTSIDE):
            assert cli_search(word, *who) == [], (word, who)
    assert [h["path"] for h in cli_search(ENG, "--groups", "engineering")] == ["eng/e.md"]
    assert [h["path"] for h in cli_search(HR, "--groups", "executives")] == ["hr/s.md"]
    for word in (PRIVATE, OUTSIDE):  # ignored or outside: nobody, executives included
        assert cli_search(word, "--groups", "executives,engineering") == []
    # hybrid: the vector side returns public text only, never a link's path
    res = runner.invoke(app, ["search", f"{HR} bonus pool", "--kb", "k", "--json"])
    assert res.exit_code == 0, res.output
    assert {h["path"] for h in json.loads(res.stdout)} == {"pub/open.md"}


@pytest.mark.parametrize("loops", [False, True], ids=["links", "links_and_loops"])
def test_cli_ingest_and_search_a_link_reaches_no_caller_past_its_target_rules(tmp_path, loops):
    """The issue's repro through the real CLI, every kind of link at once."""
    root = linked_folder(tmp_path, loops)
    res = runner.invoke(app, ["ingest", str(root), "--kb", "k", "-q"])
    assert res.exit_code == 0, res.output
    check_cli_kb()
    assert ("skipped pub/l.md: symbolic link to hr/s.md: not followed (the target is read at "
            "its own path, under its own access and ignore rules)") in res.stderr
    assert "skipped pub/out.md: symbolic link to outside the source folder" in res.stderr
    links = len(LINK_PATHS) - (0 if loops else len(LOOPS))
    assert "3 added" in res.stdout and f"{links} skipped" in res.stdout


def test_a_file_replaced_by_a_link_is_dropped_not_read_through_the_link(settings, tmp_path,
                                                                       embedder):
    root = linked_folder(tmp_path, loops=False)
    (root / "pub" / "l.md").unlink()
    (root / "pub" / "l.md").write_text("# Later\n\nA plain note for now.\n", encoding="utf-8")
    Ingestor(settings, "k", embedder=embedder).run(root)
    (root / "pub" / "l.md").unlink()
    os.symlink("../hr/s.md", root / "pub" / "l.md")
    again = Ingestor(settings, "k", embedder=embedder).run(root)
    statuses = {(f.path, f.status) for f in again.files if f.path == "pub/l.md"}
    assert statuses == {("pub/l.md", "skipped"), ("pub/l.md", "removed")}
    kb = KnowledgeBase(settings, "k")
    try:
        assert sorted(kb.store.paths()) == ["eng/e.md", "hr/s.md", "pub/open.md"]
    finally:
        kb.close()


def test_a_file_swapped_for_a_link_after_the_walk_is_not_read(tmp_path):
    (tmp_path / "s.md").write_text("secret", encoding="utf-8")
    os.symlink("s.md", tmp_path / "l.md")
    with pytest.raises(OSError):
        read_source(tmp_path / "l.md")
    assert read_source(tmp_path / "s.md") == b"secret"


def test_watch_mode_follows_no_link_a_batch_names(settings, tmp_path, embedder):
    """Links made after the first ingest, named by file events as a watcher (or a
    polling one) may report them: the link, a linked folder and a path under it."""
    from kbagent.kb.watch import FolderWatcher

    root = tmp_path / "D"
    (root / "hr").mkdir(parents=True)
    (root / "pub").mkdir()
    (root / ".kbaccess").write_text("hr/** executives\n", encoding="utf-8")
    (root / "hr" / "s.md").write_text(f"# Pay\n\nThe {HR} bonus.\n", encoding="utf-8")
    (root / "pub" / "open.md").write_text("# Open\n\nThe cafeteria.\n", encoding="utf-8")
    ingestor = Ingestor(settings, "k", embedder=embedder)
    ingestor.run(root)
    os.symlink("../hr/s.md", root / "pub" / "l.md")
    os.symlink("../hr", root / "pub" / "hrdir")
    named = {"pub/l.md", "pub/hrdir", "pub/hrdir/s.md", "pub"}
    skipped: list[tuple[str, str]] = []
    seen = walk_named(root, named, ["hr/s.md", "pub/open.md"], skipped)
    assert [f.path for f in seen] == ["hr/s.md", "pub/open.md"]
    assert {p for p, _ in skipped} == {"pub/l.md", "pub/hrdir"}
    update = FolderWatcher(ingestor, root).apply(named, False)
    assert not update.error and not update.committed
    assert {(f.path, f.status) for f in update.notes} == {("pub/l.md", "skipped"),
                                                         ("pub/hrdir", "skipped")}
    kb = KnowledgeBase(settings, "k")
    try:
        assert sorted(kb.store.paths()) == ["hr/s.md", "pub/open.md"]
    finally:
        kb.close()


def test_tools_and_resources_read_stored_text_so_they_see_no_link(settings, tmp_path,
                                                                  embedder):
    """The agent's file tools and a server's resources read the store, never the folder:
    with the links kept out of the store they show nothing through them."""
    from kbagent.agent.answer.citations import CitationLedger
    from kbagent.agent.tools.base import ToolContext
    from kbagent.agent.tools.schema import validate
    from kbagent.agent.tools.toolset import registry, run_tool
    from kbagent.kb.search import HybridSearcher
    from kbagent.server.service import KbService

    Ingestor(settings, "k", embedder=embedder).run(linked_folder(tmp_path, loops=False))
    kb = KnowledgeBase(settings, "k")
    service = KbService(settings, ["k"])
    try:
        tools = registry("knowledge")
        for who in (ANONYMOUS, ENGINEERING):
            ctx = ToolContext({"k": kb}, HybridSearcher([kb]), CitationLedger(100),
                              principal=who)
            for name, args in (("kb_grep", {"pattern": HR}), ("kb_grep", {"pattern": "424242"}),
                               ("kb_cat", {"path": "pub/l.md"}),
                               ("kb_cat", {"path": "pub/hrdir/s.md"}),
                               ("kb_glob", {"pattern": "pub/**"})):
                out, _ = run_tool(tools[name], ctx, validate(name, tools[name].parameters, args))
                assert HR not in out.text.replace(str(args.get("pattern")), "")
                assert "424242" not in out.text.replace(str(args.get("pattern")), "")
                assert not {s.path for s in out.sources} - {"pub/open.md", "eng/e.md"}
            assert not {p for _, p in service.documents(who)} & (LINK_PATHS | {"hr/s.md"})
        assert FileViews(kb, EXECUTIVES).paths() == ["hr/s.md", "pub/open.md"]
    finally:
        service.close()
        kb.close()


# ------------------------------------------------------------------ PostgreSQL
@pytest.fixture(scope="module")
def pg_dsn():
    from tests.pg_server import serve_or_skip

    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[dev]'")
    yield from serve_or_skip("PG link")


def test_cli_pg_store_a_link_reaches_no_caller_past_its_target_rules(tmp_path, pg_dsn):
    root = linked_folder(tmp_path, loops=False)
    res = runner.invoke(app, ["ingest", str(root), "--kb", "k", "-q", "--store", pg_dsn])
    assert res.exit_code == 0, res.output
    check_cli_kb()
    assert "skipped pub/l.md: symbolic link to hr/s.md: not followed" in res.stderr
