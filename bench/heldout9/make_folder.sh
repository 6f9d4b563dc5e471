#!/usr/bin/env bash
# Build the ninth held-out documentation folder: the pytest 7.2.1 documentation, as Sphinx
# HTML, from the Debian package python-pytest-doc (installed here if missing, without
# recommends; it does not need python3-pytest). postgresql-doc-15, python-scrapy-doc,
# python-celery-doc, python-flask-doc, python-werkzeug-doc, python-sqlalchemy-doc,
# python-lxml-doc and a few more were looked at and not used (see README.md). Copies every
# *.html file below /usr/share/doc/python-pytest-doc/html, subfolders kept (249 files:
# reference/ with the API, the configuration options, the fixtures, the exit codes and the
# list of plugins, how-to/, explanation/, example/, announce/ (the release announcements),
# proposals/ and the top-level pages: deprecations, backwards compatibility, contributing,
# the history, the builtin fixtures, ...) except:
# - four Sphinx pages that hold no prose, only navigation: search.html (the search box
#   stub), py-modindex.html (the Python module index), contents.html (the table of
#   contents of the whole documentation, only links) and 404.html ("page not found");
# - recwarn.html, a stub that says only that the page has moved;
# - _modules/ (29 pages): the highlighted Python source code of pytest's own modules
#   (sphinx.ext.viewcode's "[source]" pages), program code rather than documentation.
# Debian ships the changelog compressed (changelog.html.gz, the only compressed page):
# it is decompressed into DEST as changelog.html. The folder has no byte-identical
# duplicates (checked on every run: a duplicate makes this script fail, to be added to
# EXCLUDE). The reStructuredText sources of _sources/ (*.txt), the stylesheets, scripts and
# images of _static/ and _images/ are left out. 216 files (215 copied, 1 decompressed),
# 4.7 MB of HTML (1.44 MB of extracted text), into DEST (default
# bench/out/heldout9/python-pytest-doc, gitignored); prints DEST.
#
#   bench/heldout9/make_folder.sh [DEST]
set -euo pipefail

PKG=python-pytest-doc
SRC=/usr/share/doc/python-pytest-doc/html
M=_modules
EXCLUDE=(search.html py-modindex.html contents.html 404.html recwarn.html
    $M/index.html $M/_pytest/_code/code.html $M/_pytest/assertion.html
    $M/_pytest/cacheprovider.html $M/_pytest/capture.html $M/_pytest/config.html
    $M/_pytest/config/argparsing.html $M/_pytest/config/exceptions.html
    $M/_pytest/doctest.html $M/_pytest/fixtures.html $M/_pytest/freeze_support.html
    $M/_pytest/hookspec.html $M/_pytest/junitxml.html $M/_pytest/legacypath.html
    $M/_pytest/logging.html $M/_pytest/main.html $M/_pytest/mark.html
    $M/_pytest/mark/structures.html $M/_pytest/monkeypatch.html $M/_pytest/nodes.html
    $M/_pytest/outcomes.html $M/_pytest/pytester.html $M/_pytest/python.html
    $M/_pytest/python_api.html $M/_pytest/recwarn.html $M/_pytest/reports.html
    $M/_pytest/runner.html $M/_pytest/stash.html $M/_pytest/tmpdir.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout9/python-pytest-doc}"

MARKER=reference/reference.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)

if [[ -d "$DEST/$M" ]] && [[ -n $(find "$DEST/$M" -type f -name '*.html') ]]; then
    echo "make_folder: pages of $M were copied (a later package version has new ones: add" \
        "them to EXCLUDE):" $(cd "$DEST" && find "$M" -type f -name '*.html') >&2
    exit 1
fi
zcat "$SRC/changelog.html.gz" > "$DEST/changelog.html"
echo "make_folder: changelog.html decompressed from $SRC/changelog.html.gz" >&2
check_no_duplicates
echo "$dest"
