#!/usr/bin/env bash
# Build the seventh held-out documentation folder: the rsyslog 8.2302.0 documentation, as
# Sphinx HTML, from the Debian package rsyslog-doc (installed here if missing, without
# recommends; it does not need the rsyslog daemon). zsh-doc, haproxy-doc,
# debian-reference-en, nut-doc, libvirt-doc, ntpsec-doc and debian-handbook were looked at
# and not used (see README.md). Copies every *.html file below
# /usr/share/doc/rsyslog-doc/html, subfolders kept (318 files: configuration/ with the
# global, input, action, queue and template parameters and one page per module (im*, om*,
# mm*, pm*), rainerscript/ with the language and its functions, concepts/ (queues, message
# parser, network stream drivers), tutorials/, troubleshooting/, installation/,
# compatibility/, historical/, whitepapers/, development/, containers/, faq/, examples/,
# proposals/, index.html and a few top-level pages) except:
# - two Sphinx pages that hold no prose, only navigation: search.html (the search box stub)
#   and genindex.html (the general index, a list of two dozen terms without text);
# - proposals/big_restructuring/ (33 pages): the outline of a proposed reorganisation of the
#   documentation, never filled in: 11 of its pages hold only a title, 4 only headings, 8
#   only a list of links to other pages of the outline; the other 10 are drafts with notes
#   to the authors ("Write a bit about the logging challenge.", "Explain!") and short pages
#   on the project's git, coding and release conventions.
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes this
# script fail, to be added to EXCLUDE). The reStructuredText sources of _sources/ (*.txt),
# the stylesheets, scripts and images of _static/ and _images/ and the files of _downloads/
# are left out. 283 files, 4.6 MB of HTML (1.6 MB of extracted text), into DEST (default
# bench/out/heldout7/rsyslog-doc, gitignored); prints DEST.
#
#   bench/heldout7/make_folder.sh [DEST]
set -euo pipefail

PKG=rsyslog-doc
SRC=/usr/share/doc/rsyslog-doc/html
R=proposals/big_restructuring
EXCLUDE=(search.html genindex.html
    $R/index.html $R/documentation_review.html
    $R/book/index.html $R/book/overview.html $R/book/installing.html $R/book/first_setup.html
    $R/book/language.html $R/book/input.html $R/book/output.html $R/book/queues.html
    $R/book/extending.html $R/book/security.html
    $R/contributing/index.html $R/contributing/documentation/index.html
    $R/contributing/code/index.html $R/contributing/code/git.html
    $R/contributing/code/standards.html
    $R/contributing/community/index.html $R/contributing/community/other.html
    $R/contributing/community/releases.html
    $R/cookbook/index.html $R/cookbook/setup/index.html
    $R/cookbook/setup/centralised_logging_logstash.html
    $R/cookbook/templates/index.html $R/cookbook/templates/rfc3164.html
    $R/cookbook/templates/rfc5424.html
    $R/reference/index.html $R/reference/action.html $R/reference/global.html
    $R/reference/input.html $R/reference/module.html $R/reference/parser.html
    $R/reference/timezone.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout7/rsyslog-doc}"

MARKER=configuration/modules/imfile.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)

if [[ -d "$DEST/$R" ]] && [[ -n $(find "$DEST/$R" -type f -name '*.html') ]]; then
    echo "make_folder: pages of $R were copied (a later package version has new ones: add" \
        "them to EXCLUDE):" $(cd "$DEST" && find "$R" -type f -name '*.html') >&2
    exit 1
fi
check_no_duplicates
echo "$dest"
