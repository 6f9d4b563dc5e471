"""The tree-sitter symbol extraction on a small multi-language fixture (no KB needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.kb.extract import detect_format
from kbagent.kb.symbols import LANGUAGES, grammar_for, parse_symbols

FIXTURE = Path(__file__).parent / "data" / "code_fixture"


def symbols_of(rel: str):
    path = FIXTURE / rel
    language = grammar_for(detect_format(rel)[1], rel)
    assert language is not None, rel
    return parse_symbols(path.read_text(encoding="utf-8"), language)


def defs(rel: str) -> dict[str, tuple[str, int, int]]:
    return {d.qualname: (d.kind, d.start_line, d.end_line) for d in symbols_of(rel).definitions}


def calls(rel: str) -> set[tuple[str, int, str]]:
    return {(r.name, r.line, r.scope) for r in symbols_of(rel).references if r.kind == "call"}


def test_every_promised_language_has_a_grammar_that_loads():
    for language in ("python", "go", "javascript", "typescript", "tsx", "rust", "java", "c",
                     "cpp", "shell"):
        assert language in LANGUAGES
        parse_symbols("x", language)  # loads the grammar wheel; raises if it is missing


@pytest.mark.parametrize(("rel", "expected"), [
    ("py/shapes.py", {"MAX_SIDES": ("constant", 3, 3), "Polygon": ("class", 6, 15),
                      "Polygon.DEFAULT_NAME": ("constant", 9, 9),
                      "Polygon.__init__": ("method", 11, 12),
                      "Polygon.perimeter": ("method", 14, 15), "describe": ("function", 18, 19),
                      "main": ("function", 22, 25)}),
    ("go/server.go", {"DefaultPort": ("constant", 5, 5), "Server": ("type", 7, 9),
                      "NewServer": ("function", 11, 13), "Server.Start": ("method", 15, 18),
                      "formatAddress": ("function", 20, 22)}),
    ("web/client.ts", {"Options": ("interface", 1, 3), "DEFAULT_TIMEOUT": ("constant", 5, 5),
                       "ApiClient": ("class", 7, 13), "ApiClient.fetchUser": ("method", 10, 12),
                       "ApiClient.constructor": ("method", 8, 8),
                       "request": ("function", 15, 17), "makeClient": ("function", 19, 19)}),
    ("web/util.js", {"slugify": ("function", 1, 3), "Router": ("class", 5, 9),
                     "Router.route": ("method", 6, 8)}),
    ("rs/lib.rs", {"LIMIT": ("constant", 1, 1), "Counter": ("type", 3, 5),
                   "Counter.new": ("method", 8, 10), "Counter.bump": ("method", 12, 15),
                   "clamp": ("function", 18, 20)}),
    ("java/Greeter.java", {"Greeter": ("class", 3, 13), "Greeter.PREFIX": ("constant", 4, 4),
                           "Greeter.greet": ("method", 6, 8), "Greeter.join": ("method", 10, 12)}),
    ("c/hash.c", {"HASH_SEED": ("macro", 3, 4), "table": ("type", 5, 7),
                  "table_t": ("type", 9, 9), "hash_string": ("function", 11, 17),
                  "bucket_of": ("function", 19, 21)}),
    ("c/stack.cpp", {"ds": ("namespace", 3, 17), "ds.Stack": ("class", 5, 11),
                     "ds.Stack.size": ("method", 8, 8), "ds.Stack.push": ("method", 13, 15)}),
    ("sh/deploy.sh", {"log": ("function", 4, 6), "deploy_service": ("function", 8, 10)}),
])
def test_definitions_at_the_right_lines(rel, expected):
    assert defs(rel) == expected


@pytest.mark.parametrize(("rel", "expected"), [
    ("py/shapes.py", {("describe", 24, "main"), ("perimeter", 19, "describe"),
                      ("Polygon", 23, "main")}),
    ("go/server.go", {("formatAddress", 16, "Server.Start"), ("Sprintf", 21, "formatAddress")}),
    ("web/client.ts", {("request", 11, "ApiClient.fetchUser"), ("ApiClient", 19, "makeClient")}),
    ("web/util.js", {("slugify", 7, "Router.route")}),
    ("rs/lib.rs", {("clamp", 13, "Counter.bump")}),
    ("java/Greeter.java", {("join", 7, "Greeter.greet")}),
    ("c/hash.c", {("hash_string", 20, "bucket_of")}),
    ("c/stack.cpp", {("push_back", 14, "ds.Stack.push")}),
    ("sh/deploy.sh", {("log", 9, "deploy_service"), ("deploy_service", 12, "")}),
])
def test_call_sites_at_the_right_lines_with_their_caller(rel, expected):
    assert expected <= calls(rel)


def test_references_that_are_not_calls_are_kept_apart():
    refs = {(r.name, r.line, r.kind) for r in symbols_of("rs/lib.rs").references}
    assert ("LIMIT", 19, "ref") in refs and ("LIMIT", 19, "call") not in refs


def test_a_syntax_error_keeps_what_parses_and_says_where():
    fs = symbols_of("py/broken.py")
    names = {d.name for d in fs.definitions}
    assert {"good_before", "good_after"} <= names
    assert fs.error.startswith("parse error at line 5")
    assert ("good_before", 10, "good_after") in {
        (r.name, r.line, r.scope) for r in fs.references if r.kind == "call"}


def test_line_numbers_map_through_the_stored_lines():
    fs = parse_symbols("def f():\n    return g()\n", "python", [10, 11])
    assert [(d.name, d.start_line, d.end_line) for d in fs.definitions] == [("f", 10, 11)]
    assert [(r.name, r.line) for r in fs.references if r.kind == "call"] == [("g", 11)]


def test_languages_without_a_grammar_are_not_indexed():
    assert grammar_for("yaml", "a.yaml") is None
    assert grammar_for("typescript", "App.tsx") == "tsx"


def test_an_error_that_wraps_the_whole_file_is_reported_where_it_starts():
    # valid Python (from CPython's test_compile.py) that the grammar cannot parse: its
    # recovery wraps the whole module in one ERROR node, which starts at line 1
    src = ("import os\n\n\nclass T:\n    def a(self):\n        return 1\n\n"
           "    def test_regressions(self):\n        def f():\n            (bar.\n"
           "        baz)\n            (bar.\n        baz(\n        ))\n")
    fs = parse_symbols(src, "python")
    assert fs.error.startswith("parse error at line 10;")
    assert {"T", "T.a", "T.test_regressions"} <= {d.qualname for d in fs.definitions}
