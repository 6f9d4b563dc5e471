"""Property-based fuzz of access parsing (issue 20): front-matter, ``.kbaccess`` and
``--groups``. Properties: nothing crashes (only the documented exceptions), and every
access declaration that is not well formed fails closed (the document is readable by
nobody; a ``.kbaccess`` or group list is refused with a one-line error).

``KBAGENT_FUZZ_EXAMPLES`` scales the number of examples (default 400 per property).
"""

from __future__ import annotations

import json
import os
import re
import string

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbagent.errors import BadInputError
from kbagent.kb.access import (
    ANONYMOUS,
    GROUP_RE,
    HIDDEN_GROUP,
    OPEN_WORDS,
    MalformedAccess,
    Principal,
    may_read,
    parse_access_rules,
    parse_group_list,
)
from kbagent.kb.extract import extract
from kbagent.kb.source_text import Skip

EXAMPLES = int(os.environ.get("KBAGENT_FUZZ_EXAMPLES", "400"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
EVERYONE = Principal("root", frozenset({"executives", "hr", "it", "a", "b-1", "x.y"}))

names = st.sampled_from(["executives", "hr", "it", "a", "b-1", "x.y"])
open_words = st.sampled_from([*sorted(OPEN_WORDS), "All", "EVERYONE"])
junk = st.text(alphabet=string.printable + "éß\u200b\x00\x1b", max_size=12)
scalars = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.booleans(),
                    names, open_words, junk)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=6)


def well_formed(value: object) -> bool:
    """The oracle, written independently of the parser: a group name, a comma-separated
    string of them, ``all`` alone, or a non-empty list of names / of open words only."""
    def ok_names(items: list[str]) -> bool:
        low = [i.strip().lower() for i in items]
        if not low or any(not i for i in low):
            return False
        if any(i in OPEN_WORDS for i in low):
            return set(low) <= OPEN_WORDS and len(set(low)) == 1
        return all(GROUP_RE.match(i) for i in low)

    if isinstance(value, str):
        return ok_names(value.split(","))
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) for v in value) and ok_names(value)
    return False


def expected_groups(value: object) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)  # type: ignore[call-overload]
    low = {str(i).strip().lower() for i in items}
    return [] if low <= OPEN_WORDS else sorted(low)


def toml_value(value: object) -> str | None:
    """A TOML literal for ``value`` (None when TOML has no way to write it)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return {"inf": "inf", "-inf": "-inf"}.get(repr(value), repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        items = [toml_value(v) for v in value]
        return None if None in items else "[" + ", ".join(str(i) for i in items) + "]"
    if isinstance(value, dict):
        pairs = [(json.dumps(k), toml_value(v)) for k, v in value.items()]
        if any(v is None for _, v in pairs):
            return None
        return "{" + ", ".join(f"{k} = {v}" for k, v in pairs) + "}"
    return None


def check_doc(text: str) -> None:
    try:
        doc = extract("doc.md", text.encode("utf-8", "surrogatepass"))
    except Skip:
        return
    if doc.access_error:
        assert doc.access == [HIDDEN_GROUP]
        assert not may_read(EVERYONE, doc.access) and not may_read(ANONYMOUS, doc.access)
    else:
        assert all(GROUP_RE.match(g) and g not in OPEN_WORDS for g in doc.access), doc.access


@FUZZ
@given(value=values, key=st.sampled_from(["access", "Access", "ACCESS", " access"]),
       blank=st.sampled_from(["", "\n", "  \n\n"]), toml=st.booleans())
def test_structured_front_matter_fails_closed(value, key, blank, toml):
    if toml:
        written = toml_value(value)
        if written is None:  # TOML cannot say this (a null): that case is YAML's
            return
        block, fence = f"{json.dumps(key.strip())} = {written}\n", "+++"
    else:
        block, fence = yaml.safe_dump({key: value}, allow_unicode=True), "---"
    text = f"{blank}{fence}\n{block}{fence}\n# Body\n\nSome text.\n"
    doc = extract("doc.md", text.encode("utf-8", "surrogatepass"))
    assert doc.access_declared
    if well_formed(value):
        assert not doc.access_error and doc.access == expected_groups(value)
    else:
        assert doc.access == [HIDDEN_GROUP] and doc.access_error, (value, doc.access)
    check_doc(text)


@FUZZ
@given(value=values, cut=st.integers(min_value=0, max_value=200),
       extra=st.text(alphabet="[]{}:,'\"-#&*!|> \n\t", max_size=6))
def test_broken_front_matter_fails_closed(value, cut, extra):
    block = yaml.safe_dump({"title": "T", "access": value}, allow_unicode=True)
    broken = block[:cut] + extra + block[cut:]
    text = f"---\n{broken}\n---\nbody text\n"
    check_doc(text)
    # the block the extractor reads: up to the first closing fence (the cut may add one)
    lines = text.split("\n")[1:]
    broken = "\n".join(lines[:next(i for i, ln in enumerate(lines)
                                   if ln.strip() in ("---", "..."))])
    try:
        parsed = yaml.safe_load(broken)
    except Exception:  # any YAML failure: the access line is there
        parsed = None
    doc = extract("doc.md", text.encode("utf-8", "surrogatepass"))
    if parsed is None or not isinstance(parsed, dict):
        if any(re.match(r"access\b", ln.lstrip(" -?\"'\t").lower())
               for ln in broken.splitlines()):
            assert doc.access == [HIDDEN_GROUP], broken
    elif "access" in parsed and not well_formed(parsed["access"]):
        assert doc.access == [HIDDEN_GROUP], broken


@FUZZ
@given(text=st.text(max_size=300))
def test_any_text_extracts_without_crashing(text):
    check_doc(text)
    check_doc("---\n" + text)
    check_doc("+++\n" + text + "\n+++\nbody\n")


token = st.one_of(names, open_words, junk, st.sampled_from(["hr,it", ",", "all,hr", "a,,b"]))
pattern = st.one_of(st.sampled_from(["docs/**", "*.md", "src/secret/**", "/a", "!x", "[", "\\",
                                     "**/", "a[b-", "#c"]), junk.filter(lambda s: " " not in s))


@FUZZ
@given(lines=st.lists(st.tuples(pattern, st.lists(token, max_size=4)), max_size=6),
       paths=st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz/._-*", max_size=20),
                      max_size=5))
def test_kbaccess_parses_or_refuses_with_one_line(lines, paths):
    text = "\n".join(" ".join([p, *gs]) for p, gs in lines)
    try:
        rules = parse_access_rules(text)
    except MalformedAccess as e:
        assert "\n" not in str(e).strip()
        return
    for _, groups in rules.rules:
        assert all(GROUP_RE.match(g) and g not in OPEN_WORDS for g in groups)
    for p in paths:
        got = rules.groups_for(p)
        assert got is None or all(GROUP_RE.match(g) for g in got)


@FUZZ
@given(text=st.one_of(junk, st.lists(st.one_of(names, open_words, junk), max_size=4).map(
    ",".join)))
def test_a_caller_never_holds_a_reserved_or_invalid_group(text):
    try:
        groups = parse_group_list(text, "--groups")
    except BadInputError as e:
        assert "\n" not in str(e)
        return
    assert all(GROUP_RE.match(g) and g not in OPEN_WORDS for g in groups)
    assert HIDDEN_GROUP not in groups
