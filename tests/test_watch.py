"""Watch mode (kb/watch.py, ``kbagent ingest --watch``) on a real folder with real
file events: new files, edits, deletions, renames, ignore files and ``.kbaccess``
reach a reader that stays open; a kill -9 in the middle of an update leaves a usable
KB and the next start catches up. Every wait is a poll with a generous bound: no
test asserts how fast anything is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase, current_generation
from kbagent.kb.watch import FolderWatcher, IgnoreRules, WatchUpdate
from kbagent.session import Session

ROOT = Path(__file__).resolve().parent.parent
BOUND = 90.0  # seconds: a busy machine may be slow; only a hang fails


def ctrl_c_reaches_the_child() -> None:
    """Popen's preexec_fn: the child takes Ctrl-C as a person's terminal would. A
    process started in the background by a non-interactive shell (``make test &``)
    ignores SIGINT, and its children inherit that, so without this the test's
    Ctrl-C never reached the watcher and the test waited out its timeout."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(cond: Callable[[], bool], bound: float = BOUND) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


@pytest.fixture
def watched(make_folder, settings, embedder):
    """KB ``w`` ingested from a folder and a watcher running on it in a thread; a
    reader session opened before any change (it must see the new generations)."""
    root = make_folder({"a.md": "# Alpha\n\nThe aardvark sleeps.\n",
                        "b.md": "# Beta\n\nThe badger digs.\n"})
    ingestor = Ingestor(settings, "w", embedder=embedder)
    ingestor.run(root)
    updates: list[WatchUpdate] = []
    watcher = FolderWatcher(ingestor, root, on_update=updates.append, debounce_ms=400,
                            step_ms=100)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    session = Session(settings, ["w"])
    session.open_kbs()
    time.sleep(0.3)  # let the watcher register its watches before the first change
    yield root, session, updates
    watcher.stop()
    thread.join(30)
    session.close()
    assert not thread.is_alive()


def paths_for(session: Session, word: str) -> set[str]:
    return {h.path for h in session.search(word, k=10, mode="bm25").hits}


def test_a_new_file_an_edit_a_deletion_and_a_rename_reach_an_open_reader(watched):
    root, session, updates = watched
    (root / "c.md").write_text("# Gamma\n\nThe zebracorn gallops.\n")
    assert wait_for(lambda: paths_for(session, "zebracorn") == {"c.md"})

    (root / "a.md").write_text("# Alpha\n\nThe aardvark now reads quokkas.\n")
    assert wait_for(lambda: paths_for(session, "quokkas") == {"a.md"})

    (root / "b.md").unlink()
    assert wait_for(lambda: paths_for(session, "badger") == set())

    (root / "c.md").rename(root / "renamed.md")
    assert wait_for(lambda: paths_for(session, "zebracorn") == {"renamed.md"})
    kb = session.kb("w")
    assert sorted(kb.store.paths()) == ["a.md", "renamed.md"]
    done = [u for u in updates if u.committed]
    assert done and all(u.generation.startswith("gen-") for u in done)
    line = done[0].line()
    assert "1 added, 0 changed, 0 removed" in line and "chunks" in line and line.endswith("s")


def test_a_burst_of_saves_is_one_update(watched):
    root, session, updates = watched
    before = len(updates)
    for i in range(20):
        (root / f"burst{i}.md").write_text(f"# Burst {i}\n\nThe wombat{i} burrows.\n")
    assert wait_for(lambda: len(paths_for(session, "wombat19")) == 1)
    assert wait_for(lambda: sum(u.added for u in updates[before:]) == 20)
    # at most a couple of batches for 20 saves made at once (never one per save)
    assert len([u for u in updates[before:] if u.committed]) <= 3


def test_ignored_files_are_never_indexed(watched):
    root, session, _updates = watched
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.md").write_text("# Out\n\nThe ocelot hides.\n")
    (root / "debug.log").write_text("the ocelot log\n")
    (root / "kept.md").write_text("# Kept\n\nThe ocelot shows.\n")
    assert wait_for(lambda: paths_for(session, "ocelot") == {"kept.md"})
    rules = IgnoreRules(root)
    assert rules.ignored("build/out.md") and rules.ignored("debug.log")
    assert rules.ignored(".git/config") and not rules.ignored("kept.md")


def test_a_changed_kbaccess_applies_access_again(watched):
    root, session, _ = watched
    (root / ".kbaccess").write_text("a.md hr\n")

    def a_groups() -> list[str]:
        kb = session.kb("w")
        kb.refresh()
        return kb.store.access_by_path().get("a.md", [])

    assert wait_for(lambda: a_groups() == ["hr"])
    assert paths_for(session, "aardvark") == set()  # anonymous no longer sees it


def test_an_access_made_malformed_is_hidden_and_noted_as_ingest_notes_it(watched):
    """(issue 45, item 9) The update hides the document and carries ingest's note."""
    root, session, updates = watched
    assert "a.md" in paths_for(session, "aardvark")
    (root / "a.md").write_text("---\naccess: [executives\n---\n# Alpha\n\nThe aardvark sleeps.\n")
    assert wait_for(lambda: any(u.committed for u in updates))
    notes = [f for u in updates for f in u.notes]
    assert [(f.path, f.hidden) for f in notes] == [("a.md", True)]
    assert notes[0].reason.startswith("malformed access declaration (front-matter is not valid "
                                      "YAML") and notes[0].reason.endswith("; hidden until fixed")
    assert "a.md" not in paths_for(session, "aardvark")


def test_the_folder_emptied_is_logged_and_the_kb_kept(watched):
    root, session, updates = watched
    (root / "a.md").unlink()
    (root / "b.md").unlink()
    assert wait_for(lambda: any(u.error for u in updates))
    assert "no ingestible files" in next(u for u in updates if u.error).line()
    assert paths_for(session, "aardvark") == {"a.md"}  # the last good generation stays


KILLED_WATCHER = """
import pathlib, sys, time
from kbagent.kb.ingest import Ingestor
from kbagent.kb.watch import FolderWatcher
from kbagent.settings import Settings
root, marker = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def checkpoint(step):
    if step == "written" and (root / "late.md").exists():  # mid-update: hold here
        marker.write_text("in update")
        time.sleep(600)
ingestor = Ingestor(Settings.load(), "w", checkpoint=checkpoint)
ingestor.run(root)
FolderWatcher(ingestor, root, debounce_ms=200, step_ms=50,
              on_update=lambda u: print(u.line(), flush=True)).run()
"""


@pytest.mark.timeout(600)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_kill_9_during_an_update_leaves_a_usable_kb_and_the_next_start_catches_up(
        make_folder, settings, embedder, tmp_path, sig):
    root = make_folder({"a.md": "# Alpha\n\nThe aardvark sleeps.\n"})
    Ingestor(settings, "w", embedder=embedder).run(root)
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WATCHER, str(root), str(marker)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=ctrl_c_reaches_the_child)
    try:
        kb_dir = settings.kbs_dir / "w"
        # the watcher's start-up ingest changes nothing; then a new file starts an update
        assert wait_for(lambda: proc.poll() is None and (kb_dir / ".lock").exists())
        time.sleep(1.0)
        (root / "late.md").write_text("# Late\n\nThe latecomer lemur arrives.\n")
        if not wait_for(lambda: marker.exists() or proc.poll() is not None, 300):
            pytest.fail("the watcher never started the update")
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        gen = current_generation(kb_dir)
        os.kill(proc.pid, sig)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert current_generation(kb_dir) == gen  # the killed update never published
    if sig == signal.SIGINT:  # Ctrl-C: the half-built generation is cleaned up at once
        assert sorted(d.name for d in kb_dir.glob("gen-*")) == [gen]
    kb = KnowledgeBase(settings, "w")  # usable: opens, consistent, searchable
    assert kb.store.paths() == ["a.md"]
    kb.close()
    session = Session(settings, ["w"])
    session.open_kbs()
    assert paths_for(session, "aardvark") == {"a.md"}
    # the next start (its first ingest) catches up with what the killed update missed
    report = Ingestor(settings, "w", embedder=embedder).run(root)
    assert report.committed and [f.path for f in report.files if f.status == "added"] == \
        ["late.md"]
    assert paths_for(session, "lemur") == {"late.md"}  # the open reader sees it too
    session.close()


@pytest.mark.timeout(600)
def test_cli_ingest_watch_logs_updates_and_stops_cleanly_on_ctrl_c(make_folder, settings):
    root = make_folder({"a.md": "# Alpha\n\nThe aardvark sleeps.\n"})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "kbagent", "ingest", str(root), "--kb", "w",
                             "--watch", "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_reaches_the_child)
    lines: list[str] = []
    errs: list[str] = []
    readers = [threading.Thread(target=lambda f=f, out=out: out.extend(iter(f.readline, "")),
                                daemon=True) for f, out in ((proc.stdout, lines),
                                                            (proc.stderr, errs))]
    for reader in readers:
        reader.start()
    try:
        assert wait_for(lambda: any("KB 'w' updated" in x for x in lines), 300)
        time.sleep(1.0)  # the watch starts after the first ingest's summary line
        (root / "b.md").write_text("# Beta\n\nThe badger digs.\n")
        assert wait_for(lambda: any("1 added, 0 changed, 0 removed" in x for x in lines), 300)
        # issue 45, item 9: an access made malformed is hidden, and the log says so
        (root / "b.md").write_text("---\naccess: 5\n---\n# Beta\n\nThe badger digs.\n")
        assert wait_for(lambda: any("0 added, 1 changed, 0 removed" in x for x in lines), 300)
        assert wait_for(lambda: any("note b.md: malformed access declaration (front-matter "
                                    "access: expected a group name or a list of them, got int "
                                    "5); hidden until fixed" in x for x in errs), 60), errs
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        for reader in readers:
            reader.join(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(errs)
    assert proc.returncode == 0, err
    assert "stopped watching; KB 'w' is at gen-000003" in err
    kb = KnowledgeBase(settings, "w")
    assert sorted(kb.store.paths()) == ["a.md", "b.md"]
    kb.close()


def test_a_reader_following_many_generations_does_not_keep_each_one_open(make_folder, settings,
                                                                          embedder):
    root = make_folder({"a.md": "# Alpha\n\nversion 0\n"})
    ingestor = Ingestor(settings, "w", embedder=embedder)
    ingestor.run(root)
    kb = KnowledgeBase(settings, "w")

    def next_generation(i: int) -> None:
        (root / "a.md").write_text(f"# Alpha\n\nversion {i}\n")
        ingestor.run(root)
        assert kb.refresh()

    for i in range(1, 6):
        next_generation(i)
    fds = len(os.listdir("/proc/self/fd"))
    for i in range(6, 26):
        next_generation(i)
    assert len(os.listdir("/proc/self/fd")) < fds + 10  # not one more per generation
    assert kb.store.document_lines("a.md")[1][2].text == "version 25"
    kb.close()


def test_walk_named_sees_what_a_full_walk_sees_after_the_named_changes(make_folder):
    import shutil

    from kbagent.kb.walker import walk, walk_named

    root = make_folder({".gitignore": "build/\n*.log\n", "a.md": "a", "keep.md": "k",
                        "sub/b.md": "b", "sub/.kbagentignore": "secret.md\n",
                        "sub/secret.md": "s", "build/x.md": "x", "c.log": "c",
                        ".git/config": "g", "old/o1.md": "o", "old/deep/o2.md": "o"})

    def full() -> list[str]:
        return [f.path for f in walk(root)]

    known = full()
    assert known == ["a.md", "keep.md", "old/deep/o2.md", "old/o1.md", "sub/b.md"]
    (root / "a.md").unlink()
    (root / "sub" / "new.md").write_text("n")
    (root / "sub" / "secret.md").write_text("changed, still ignored")
    (root / "build" / "y.md").write_text("ignored")
    (root / "d.log").write_text("ignored")
    (root / "newdir" / "deep").mkdir(parents=True)
    (root / "newdir" / "deep" / "n1.md").write_text("n")
    shutil.move(root / "old", root / "moved")
    named = {"a.md", "sub/new.md", "sub/secret.md", "build/y.md", "d.log", "newdir", "old",
             "moved", ".git/index"}
    got = walk_named(root, named, known)
    assert [f.path for f in got] == full()
    sizes = {f.path: f.size for f in got}
    assert sizes["keep.md"] == 0 and sizes["sub/new.md"] == 1  # known ones are not visited


def test_a_session_hands_out_the_kb_at_its_newest_generation(make_folder, settings, embedder):
    root = make_folder({"a.md": "# Alpha\n\nThe aardvark sleeps.\n"})
    ingestor = Ingestor(settings, "w", embedder=embedder)
    ingestor.run(root)
    session = Session(settings, ["w"])
    session.open_kbs()
    (root / "b.md").write_text("# Beta\n\nThe badger digs.\n")
    ingestor.run(root)
    kb = session.kb("w")  # what the TUI's document views and Browse read
    assert sorted(kb.store.paths()) == ["a.md", "b.md"]
    assert kb.generation == current_generation(settings.kbs_dir / "w")
    session.close()
