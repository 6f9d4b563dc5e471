#!/usr/bin/env bash
# Build the fifth held-out documentation folder: the Varnish Cache 7.1 documentation, as
# Sphinx HTML, from the Debian package varnish-doc (installed here if missing, without
# recommends; it does not need the varnish server). Copies every *.html file below
# /usr/share/doc/varnish/html, subfolders kept (165 files: installation/, tutorial/,
# users-guide/, reference/ with the manual pages of varnishd (every run-time parameter with
# its default), varnish-cli, varnishadm, varnishlog, varnishncsa, varnishstat, varnishtest,
# VCL and the VMODs, vcl-design-patterns/, whats-new/ (changes and upgrade notes from 4.0 to
# 7.1), dev-guide/, phk/ (Poul-Henning Kamp's essays), glossary/ and index.html) except two
# Sphinx pages that hold no prose, only navigation: search.html (a "please activate
# JavaScript" stub for the search box) and genindex.html (the general index, a list of two
# dozen glossary terms without text). The folder has no byte-identical duplicates. The
# reStructuredText sources of _sources/ (*.txt), the stylesheets, scripts and images of
# _static/ and _images/ are left out. 163 files, 3.0 MB of HTML (1.1 MB of extracted
# text), into DEST (default bench/out/heldout5/varnish-doc, gitignored); prints DEST.
#
#   bench/heldout5/make_folder.sh [DEST]
set -euo pipefail

PKG=varnish-doc
SRC=/usr/share/doc/varnish/html
EXCLUDE=(search.html genindex.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout5/varnish-doc}"

MARKER=reference/varnishd.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
copy_doc_pages
