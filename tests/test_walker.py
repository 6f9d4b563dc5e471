"""Folder walking: ignore files, always-skipped folders, symlinks."""

from __future__ import annotations

import os

from kbagent.kb.walker import walk


def test_gitignore_and_kbagentignore_are_respected_at_every_level(make_folder):
    root = make_folder({
        ".gitignore": "build/\n*.log\n",
        ".kbagentignore": "drafts/\n!keep.log\n",
        "a.md": "a", "run.log": "x", "keep.log": "k",
        "build/out.md": "x", "drafts/d.md": "x",
        "sub/.gitignore": "secret.md\n", "sub/secret.md": "x", "sub/ok.md": "ok",
        ".git/config": "x", "node_modules/pkg/readme.md": "x",
    })
    paths = [f.path for f in walk(root)]
    assert paths == ["a.md", "keep.log", "sub/ok.md"]


def test_symlinks_are_never_followed_inside_the_root_or_out(make_folder, tmp_path):
    """(issue 45: a link inside the root carried its target past the target's access
    rules; tests/test_access_links.py has the rest)"""
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    root = make_folder({"in.md": "x"})
    os.symlink(outside, root / "link.md")
    os.symlink(root / "in.md", root / "alias.md")
    skipped: list[tuple[str, str]] = []
    assert [f.path for f in walk(root, skipped)] == ["in.md"]
    assert [p for p, _ in skipped] == ["alias.md", "link.md"]


def test_a_kbagent_home_inside_the_folder_is_never_a_source(tmp_path):
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.settings import Settings

    src = tmp_path / "docs"
    src.mkdir()
    (src / "guide.md").write_text("# Guide\n\nThe frob skin is heron.\n", encoding="utf-8")
    settings = Settings.load(home=src / "home")  # the user put the home in the folder
    first = Ingestor(settings, "docs", embedder=load_embedder()).run(src)
    assert first.count("added") == 1  # not the lock file the first ingest itself creates
    Ingestor(settings, "docs", embedder=load_embedder()).run(src)  # now the home exists
    assert [f.path for f in walk(src)] == ["guide.md"]
    # what a file watcher reports from the home (the ingest's own writes) is no change
    from kbagent.kb.walker import walk_named

    assert [f.path for f in walk_named(src, {"home/kbs/docs/.lock", "home"},
                                       ["guide.md"])] == ["guide.md"]
