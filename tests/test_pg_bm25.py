"""Exact top-k BM25 over postings blocks (kbagent/kb/pg/bm25.py) against the exhaustive
statement, on a real server (tests/pg_server.py); skipped with the reason when it
cannot start. A corpus of a few thousand chunks with a Zipfian vocabulary (terms in
nearly every chunk and terms in a handful), three access-group sets."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from kbagent.kb.access import ANONYMOUS, Principal
from kbagent.kb.pg import bm25, bm25_blocks
from kbagent.kb.pg.ingest import PgIngestor
from kbagent.kb.stores import open_kb
from tests.hash_embedder import HashEmbedder
from tests.pg_server import serve_or_skip

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[dev]'")
WHO = (ANONYMOUS, Principal("maya", frozenset({"hr"})),
       Principal("boss", frozenset({"executives", "hr"})))
KS = (1, 10, 100)
VOCAB = ["".join("bcdfghjklmnprstvz"[(i * 7 + j * 3) % 17] + "aeiou"[(i + j) % 5]
                 for j in range(2 + i % 3)) + "x" + "".join("qwrty"[int(c) % 5] for c in str(i))
         for i in range(1500)]
ACCESS = "hr/** hr\nexec/** executives\n"


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    """Segments of 4 blocks: this corpus's frequent terms span several, so segment
    tails are cut again and deletions search segments; searches read one block, then
    two, four..., so they stop before reading every block."""
    monkeypatch.setattr(bm25_blocks, "SEGMENT", 4 * bm25_blocks.BLOCK)
    monkeypatch.setattr(bm25_blocks, "BULK_SEGMENT", 16 * bm25_blocks.BLOCK)
    monkeypatch.setattr(bm25, "FIRST_BATCH", 1)  # small batches: searches stop early


@pytest.fixture(scope="module")
def pg_dsn():
    yield from serve_or_skip("PG BM25")


def _words(rnd: random.Random, n: int) -> str:
    # Zipf: word i drawn with weight 1 / (i + 1)
    return " ".join(rnd.choices(VOCAB, weights=[1 / (i + 1) for i in range(len(VOCAB))], k=n))


def corpus(seed: int, docs: int) -> dict[str, str]:
    rnd = random.Random(seed)
    out = {}
    for d in range(docs):
        folder = "hr" if d % 4 == 1 else "exec" if d % 8 == 2 else "pub"
        sections = "\n\n".join(f"## Part {s}\n\n{_words(rnd, rnd.randint(15, 70))}"
                               for s in range(5))
        out[f"{folder}/doc{seed}_{d}.md"] = f"# Doc {d}\n\n{sections}\n"
    return out


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def ingest(settings, name: str, dsn: str, folder: Path, bulk_: bool | None = None) -> PgIngestor:
    ing = PgIngestor(settings, name, dsn, bulk=bulk_, embedder=HashEmbedder())
    ing.run(folder)
    return ing


def queries(seed: int = 5) -> list[str]:
    rnd = random.Random(seed)
    frequent, middle, rare = VOCAB[:6], VOCAB[20:200], VOCAB[600:]
    out = [" ".join(rnd.sample(frequent, rnd.randint(1, 3))) for _ in range(8)]
    out += [f"{rnd.choice(frequent)} {rnd.choice(middle)}" for _ in range(8)]
    out += [f"{rnd.choice(rare)} {rnd.choice(middle)} {rnd.choice(frequent)}" for _ in range(8)]
    out += [rnd.choice(rare) for _ in range(4)] + ["nosuchwordanywhere", VOCAB[0]]
    return out


def bm25_top(kb, q: str, k: int, who, fast: bool) -> list[tuple[int, float]]:
    kb.fast_bm25 = fast
    found = kb.search_evidence(q, "bm25", None, k, who)
    return [(cid, float(s)) for cid, _r, s, _vr, _vs in found]


def assert_same(kb, q: str, k: int, who) -> int:
    """The fast top k equals the exhaustive one: same scores (to the last bits), same
    ids but for chunks whose scores tie; the number of positions that differ."""
    fast = bm25_top(kb, q, k, who, True)
    assert kb.blocks_read >= 0  # the blocks were read, not the exhaustive statement
    slow = bm25_top(kb, q, k, who, False)
    deep = dict(bm25_top(kb, q, k + 50, who, False))
    assert len(fast) == len(slow), (q, k, who)
    swaps = 0
    for (fi, fs), (si, ss) in zip(fast, slow, strict=True):
        assert math.isclose(fs, ss, rel_tol=1e-12), (q, k, fi, fs, si, ss)
        if len(kb.lexical.terms(q)) == 1:  # one term: nothing summed, the same float8
            assert fs == ss, (q, k, fi, fs, si, ss)
        if fi != si:  # a tie ordered by the last bits of the exhaustive sums
            assert fi in deep and math.isclose(deep[fi], fs, rel_tol=1e-12), (q, k, fi)
            swaps += 1
    assert [s for _, s in fast] == sorted((s for _, s in fast), reverse=True)
    assert len({i for i, _ in fast}) == len(fast)
    return swaps


def check_all(kb) -> None:
    swaps = sum(assert_same(kb, q, k, who) for q in queries() for k in KS for who in WHO)
    assert swaps <= 3


def check_blocks(dsn: str, kb: str) -> None:
    """The blocks hold every posting once, in its chunk's group set, cut in id-ordered
    in segments, with (tf, length) frontiers that bound every posting they cover."""
    with psycopg.connect(dsn) as c:
        diff = c.execute(
            "WITH b AS (SELECT b.term, b.groups, u.id, u.tf, u.len FROM kbagent_blocks b, "
            "unnest(b.ids, b.tfs, b.lens) u(id, tf, len) WHERE b.kb = %(kb)s), "
            "p AS (SELECT p.term, c.groups, p.chunk_id AS id, p.tf, p.n_tokens AS len FROM "
            "kbagent_postings p JOIN kbagent_chunks c ON c.kb = p.kb AND c.id = p.chunk_id "
            "WHERE p.kb = %(kb)s) "
            "SELECT (SELECT count(*) FROM (TABLE b EXCEPT ALL TABLE p) x), "
            "(SELECT count(*) FROM (TABLE p EXCEPT ALL TABLE b) y), (SELECT count(*) FROM p)",
            {"kb": kb}).fetchone()
        assert diff[:2] == (0, 0) and diff[2] > 0, diff
        bad = c.execute(  # blocks of up to BLOCK inside their segment; segments disjoint
            "SELECT count(*) FROM kbagent_blocks b WHERE b.kb = %(kb)s AND (cardinality(b.ids) "
            "NOT BETWEEN 1 AND %(n)s OR b.seg > (SELECT min(i) FROM unnest(b.ids) i) "
            "OR b.seg_hi < (SELECT max(i) FROM unnest(b.ids) i) "
            "OR EXISTS (SELECT 1 FROM kbagent_blocks x WHERE x.kb = b.kb AND x.term = b.term "
            "AND x.groups = b.groups AND x.seg != b.seg AND x.seg <= b.seg_hi "
            "AND x.seg_hi >= b.seg))", {"kb": kb, "n": bm25_blocks.BLOCK}).fetchone()[0]
        assert bad == 0
        big = c.execute("SELECT count(*) FROM (SELECT 1 FROM kbagent_blocks WHERE kb = %s "
                        "GROUP BY term, groups, seg HAVING sum(cardinality(ids)) > %s) x",
                        (kb, bm25_blocks.BULK_SEGMENT)).fetchone()[0]
        assert big == 0
        undominated = c.execute(  # every posting is matched or beaten by a frontier pair
            "SELECT count(*) FROM kbagent_blocks b, unnest(b.tfs, b.lens) u(tf, len) "
            "WHERE b.kb = %s AND NOT EXISTS (SELECT 1 FROM unnest(b.ftf, b.flen) f(tf, len) "
            "WHERE f.tf >= u.tf AND f.len <= u.len)", (kb,)).fetchone()[0]
        assert undominated == 0
        unpacked = c.execute(  # the packed records are the arrays' postings, in id order
            "SELECT count(*) FROM kbagent_blocks b WHERE b.kb = %s AND b.packed IS DISTINCT "
            "FROM (SELECT string_agg(int8send(u.id) || int4send(u.tf) || int4send(u.len), "
            "''::bytea ORDER BY u.id) FROM unnest(b.ids, b.tfs, b.lens) u(id, tf, len))",
            (kb,)).fetchone()[0]
        assert unpacked == 0


def segments(dsn: str, kb: str, terms: list[str]) -> list[int]:
    """The segments of each chain of ``terms`` (by group set)."""
    with psycopg.connect(dsn) as c:
        return [int(n) for (n,) in c.execute(
            "SELECT count(DISTINCT seg) FROM kbagent_blocks WHERE kb = %s AND term = ANY(%s) "
            "GROUP BY term, groups ORDER BY term, groups::text", (kb, terms)).fetchall()]


def chain_sizes(dsn: str, kb: str, word: str, kbo) -> list[int]:
    with psycopg.connect(dsn) as c:
        return [int(n) for (n,) in c.execute(
            "SELECT count(*) FROM kbagent_postings p JOIN kbagent_chunks ch ON ch.kb = p.kb "
            "AND ch.id = p.chunk_id WHERE p.kb = %s AND p.term = ANY(%s) "
            "GROUP BY p.term, ch.groups ORDER BY p.term, ch.groups::text",
            (kb, kbo.lexical.terms(word))).fetchall()]


def test_fast_bm25_equals_the_exhaustive_statement(settings, tmp_path, pg_dsn, monkeypatch):
    src = tmp_path / "src"
    write(src, corpus(1, 600))
    (src / ".kbaccess").write_text(ACCESS, encoding="utf-8")
    ing = ingest(settings, "fast", pg_dsn, src)
    assert ing.loaded_in_bulk
    kb = open_kb(settings, "fast")
    assert kb.chunks > 2500
    check_blocks(pg_dsn, "fast")
    assert segments(pg_dsn, "fast", kb.lexical.terms(VOCAB[0])) == [
        -(-n // bm25_blocks.BULK_SEGMENT) for n in chain_sizes(pg_dsn, "fast", VOCAB[0], kb)]
    check_all(kb)  # the chunks read found through an array over the ids' span
    with monkeypatch.context() as m:  # and, for ids spanning more, in id order
        m.setattr(bm25, "DENSE_SPAN", 0)
        check_all(kb)
    with monkeypatch.context() as m:  # candidates completed a few postings a round trip
        m.setattr(bm25, "LOOKUP_BATCH", 3)
        check_all(kb)
    # early termination: a frequent term's top 1 and top 10 read a part of its blocks
    with psycopg.connect(pg_dsn) as c:
        total = c.execute("SELECT count(*) FROM kbagent_blocks WHERE kb = 'fast' AND term = "
                          "ANY(%s)", (kb.lexical.terms(VOCAB[0]),)).fetchone()[0]
    bm25_top(kb, VOCAB[0], 1, ANONYMOUS, True)
    assert 0 < kb.blocks_read < total / 4, (kb.blocks_read, total)
    bm25_top(kb, VOCAB[0], 10, ANONYMOUS, True)
    assert 0 < kb.blocks_read < total * 3 / 4, (kb.blocks_read, total)

    # incremental updates on the row path: documents changed, removed and added
    files = sorted(p for p in src.rglob("*.md"))
    rnd = random.Random(9)
    for p in rnd.sample(files, 25):
        p.write_text(p.read_text(encoding="utf-8") + "\n## More\n\n" + _words(rnd, 40) + "\n",
                     encoding="utf-8")
    for p in rnd.sample(files, 30):
        if p.exists():
            p.unlink()
    write(src, corpus(2, 20))
    ing = ingest(settings, "fast", pg_dsn, src)
    assert not ing.loaded_in_bulk
    check_blocks(pg_dsn, "fast")
    kb.refresh()
    check_all(kb)
    # a large addition takes the bulk path, appending to the same chains
    write(src, corpus(3, 700))
    ing = ingest(settings, "fast", pg_dsn, src)
    assert ing.loaded_in_bulk
    check_blocks(pg_dsn, "fast")
    kb.refresh()
    check_all(kb)
    kb.close()


def test_row_and_bulk_paths_cut_the_same_blocks(settings, tmp_path, pg_dsn, monkeypatch):
    """With the same segment size (a bulk load cuts larger ones, once), both paths cut
    the same blocks."""
    monkeypatch.setattr(bm25_blocks, "BULK_SEGMENT", bm25_blocks.SEGMENT)
    src = tmp_path / "src"
    write(src, corpus(4, 150))
    (src / ".kbaccess").write_text(ACCESS, encoding="utf-8")
    ingest(settings, "rows", pg_dsn, src, bulk_=False)
    ingest(settings, "bulk", pg_dsn, src, bulk_=True)
    named = []
    with psycopg.connect(pg_dsn) as c:
        for kb in ("rows", "bulk"):
            named.append(sorted(c.execute(
                "SELECT b.term, b.groups, b.blk, array_agg(d.path || ':' || ch.ordinal "
                "ORDER BY u.o), "
                "b.tfs, b.lens, b.ftf, b.flen FROM kbagent_blocks b, unnest(b.ids) "
                "WITH ORDINALITY u(id, o), kbagent_chunks ch, kbagent_documents d "
                "WHERE b.kb = %s AND ch.kb = b.kb AND ch.id = u.id AND d.kb = ch.kb "
                "AND d.id = ch.doc_id "
                "GROUP BY b.kb, b.term, b.groups, b.seg, b.blk, b.tfs, b.lens, b.ftf, b.flen",
                (kb,)).fetchall()))
    assert named[0] == named[1] and len(named[0]) > 100
    check_blocks(pg_dsn, "rows")


@pytest.mark.parametrize("before", ["blocks", "packed"])
def test_a_kb_built_before_the_blocks_is_read_exhaustively_then_filled(settings, tmp_path,
                                                                        pg_dsn, before):
    """A KB an older kbagent left without blocks, or with blocks of version 1 (no
    packed postings), is searched exhaustively until its next ingest cuts them."""
    src = tmp_path / "src"
    write(src, corpus(6, 120))
    (src / ".kbaccess").write_text(ACCESS, encoding="utf-8")
    ingest(settings, "old", pg_dsn, src)
    with psycopg.connect(pg_dsn) as c:  # as an older kbagent left it
        if before == "blocks":
            c.execute("DELETE FROM kbagent_blocks WHERE kb = 'old'")
            c.execute("UPDATE kbagent_kbs SET manifest = manifest - %s WHERE kb = 'old'",
                      (bm25_blocks.MANIFEST_KEY,))
        else:
            c.execute("UPDATE kbagent_blocks SET packed = NULL WHERE kb = 'old'")
            c.execute("UPDATE kbagent_kbs SET manifest = jsonb_set(manifest, %s, '1') "
                      "WHERE kb = 'old'", ([bm25_blocks.MANIFEST_KEY],))
    kb = open_kb(settings, "old")
    q = f"{VOCAB[0]} {VOCAB[30]}"
    kb.fast_bm25 = True
    got = kb.search_evidence(q, "bm25", None, 10, ANONYMOUS)
    assert kb.blocks_read == -1 and len(got) == 10  # the exhaustive statement answered
    kb.fast_bm25 = False
    assert got == kb.search_evidence(q, "bm25", None, 10, ANONYMOUS)
    ingest(settings, "old", pg_dsn, src)  # nothing changed: the blocks are filled
    check_blocks(pg_dsn, "old")
    kb.refresh()
    for who in WHO:
        assert_same(kb, q, 10, who)
    kb.close()


def test_hybrid_search_uses_the_fast_bm25_ranks(settings, tmp_path, pg_dsn):
    src = tmp_path / "src"
    write(src, corpus(7, 80))
    (src / ".kbaccess").write_text(ACCESS, encoding="utf-8")
    ingest(settings, "hyb", pg_dsn, src)
    kb = open_kb(settings, "hyb")
    vec = HashEmbedder().encode(["anything"])[0]
    for who in WHO:
        q = f"{VOCAB[1]} {VOCAB[40]}"
        kb.fast_bm25 = True
        fast = kb.search_evidence(q, "hybrid", vec, 30, who)
        assert kb.blocks_read > 0
        kb.fast_bm25 = False
        slow = kb.search_evidence(q, "hybrid", vec, 30, who)
        assert [f[0] for f in fast] == [s[0] for s in slow]
        assert all(f[1] == s[1] and f[3] == s[3] for f, s in zip(fast, slow, strict=True))
    kb.close()


def test_an_interrupted_search_leaves_no_snapshot_open(settings, tmp_path, pg_dsn, monkeypatch):
    src = tmp_path / "src"
    write(src, corpus(8, 20))
    ingest(settings, "intr", pg_dsn, src)
    kb = open_kb(settings, "intr")
    q = f"{VOCAB[0]} {VOCAB[9]}"
    before = bm25_top(kb, q, 10, ANONYMOUS, True)
    real = bm25.top_k

    def interrupted(*a, **k):
        real(*a, **k)
        raise KeyboardInterrupt

    monkeypatch.setattr(bm25, "top_k", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bm25_top(kb, q, 10, ANONYMOUS, True)
    monkeypatch.setattr(bm25, "top_k", real)
    assert kb.conn._conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    write(src, {"pub/new.md": f"# New\n\n{VOCAB[9]} {VOCAB[9]} {VOCAB[9]}\n"})
    ingest(settings, "intr", pg_dsn, src)
    after = bm25_top(kb, q, 10, ANONYMOUS, True)  # the new generation, not a held snapshot
    assert after != before and after[0][0] not in {i for i, _ in before}
    kb.close()


def test_a_database_made_before_the_packed_postings_gets_the_column_once(pg_dsn):
    """The DDL adds ``packed`` to a database made before it, and takes no lock on the
    blocks when the column is there (an ALTER TABLE would lock out the searches)."""
    from kbagent.kb.pg import schema

    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS kbagent_before_packed")
        admin.execute("CREATE DATABASE kbagent_before_packed")
    dsn = pg_dsn.rsplit("/", 1)[0] + "/kbagent_before_packed"
    with psycopg.connect(dsn, autocommit=True) as c:
        schema.create_schema(c)
        c.execute("ALTER TABLE kbagent_blocks DROP COLUMN packed")
        c.execute("COMMENT ON TABLE kbagent_kbs IS 'kbagent schema older'")  # as it was left
        schema.create_schema(c)
        has = "SELECT count(*) FROM pg_attribute WHERE attrelid = 'kbagent_blocks'::regclass " \
              "AND attname = 'packed' AND NOT attisdropped"
        assert c.execute(has).fetchone()[0] == 1
        c.execute("COMMENT ON TABLE kbagent_kbs IS 'kbagent schema older'")
        with psycopg.connect(dsn) as other:  # a search's snapshot holds a lock on the blocks
            other.execute("BEGIN READ ONLY")
            other.execute("SELECT count(*) FROM kbagent_blocks").fetchone()
            c.execute("SET lock_timeout = '2s'")
            schema.create_schema(c)  # the column is there: no ALTER, no wait
            other.execute("ROLLBACK")
        assert c.execute(has).fetchone()[0] == 1
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("DROP DATABASE kbagent_before_packed")
