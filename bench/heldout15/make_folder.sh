#!/usr/bin/env bash
# Build the fifteenth held-out documentation folder: the Buildbot 3.7 user documentation
# (the Python continuous integration framework: a buildmaster that watches version
# control, schedules builds and reports their results, and workers that run the build
# steps), as Sphinx HTML, from the Debian package buildbot-doc (installed here if missing,
# without recommends; it depends only on libjs-sphinxdoc and sphinx-rtd-theme-common, not
# on buildbot itself). Copies the *.html files of two of the folders below
# /usr/share/doc/buildbot/html, subfolders kept:
# - tutorial/ (6 files: first run, a quick tour, Buildbot in Docker, "Buildbot in five
#   minutes");
# - manual/ (141 files: introduction and concepts, installation, the buildmaster and
#   worker setup, configuration (the master.cfg reference: global settings, change
#   sources, schedulers, workers and latent workers, builders, projects, build factories,
#   properties, one page per build step, interlocks, report generators and reporters, the
#   web server, services, secrets, multi-master and testing utilities), customization,
#   the command line tool, resources, optimization, the plugin infrastructure, deployment,
#   upgrading);
# except four pages that hold no prose:
# - manual/index.html, tutorial/index.html and manual/installation/index.html (tables of
#   contents: section names and links, no sentence but the version line);
# - tutorial/further.html (one sentence, then the table of contents of one other page).
# Left out, not copied: developer/ (88 pages, the development documentation: Buildbot's
# internal APIs, its database and data API, the REST API's RAML types), relnotes/ (25
# pages, the release notes of every version since 0.8), full.html (the whole
# documentation again on one page, 1.6 MB of text), the front page, the general, module
# and API indexes, the search page and the bb-*.html index pages (lists of links); and
# the reStructuredText sources of _sources/, the stylesheets, scripts and images of
# _static/ and _images/, objects.inv and searchindex.js (not HTML).
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes
# this script fail, to be added to EXCLUDE). 143 files into DEST (default
# bench/out/heldout15/buildbot-doc, gitignored); prints DEST.
#
#   bench/heldout15/make_folder.sh [DEST]
set -euo pipefail

PKG=buildbot-doc
HTML=/usr/share/doc/buildbot/html
ROOT="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout15/buildbot-doc}"

# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"

# the two folders copied, each with the pages of it left out (relative to that folder)
SRC=$HTML/manual DEST=$ROOT/manual MARKER=configuration/schedulers.html
EXCLUDE=(index.html installation/index.html)
copy_doc_pages >/dev/null
SRC=$HTML/tutorial DEST=$ROOT/tutorial MARKER=firstrun.html
EXCLUDE=(index.html further.html)
copy_doc_pages >/dev/null

DEST=$ROOT
check_no_duplicates
echo "make_folder: $(find "$DEST" -type f -name '*.html' | wc -l) HTML files in all" >&2
echo "$DEST"
