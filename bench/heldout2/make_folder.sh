#!/usr/bin/env bash
# Build the second held-out documentation folder (issue 22): the SQLite documentation as
# HTML, from the Debian package sqlite3-doc (installed here if missing). Copies the
# regular *.html files at the top of /usr/share/doc/sqlite3 (214 files) except five
# generated pages that are not documentation of their own: the four link indexes
# doc_backlink_crossref.html, doc_keyword_crossref.html, doc_pagelink_crossref.html,
# doc_target_crossref.html, and requirements.html (1 MB of sentences excerpted from the
# other pages). Leaves out the c3ref/ (one page per C interface: capi3ref.html holds the
# same text in one page), releaselog/, session/ and syntax/ subfolders, images and CSS.
# 209 files, ~11 MB of HTML, 4.3 MB of extracted text, into DEST (default
# bench/out/heldout2/sqlite-doc, gitignored); prints DEST.
#
#   bench/heldout2/make_folder.sh [DEST]
set -euo pipefail

PKG=sqlite3-doc
SRC=/usr/share/doc/sqlite3
EXCLUDE=(doc_backlink_crossref.html doc_keyword_crossref.html doc_pagelink_crossref.html
         doc_target_crossref.html requirements.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout2/sqlite-doc}"

if [[ ! -f "$SRC/lang_corefunc.html" ]]; then
    echo "make_folder: $SRC/lang_corefunc.html is missing: installing $PKG" >&2
    if [[ $(id -u) -eq 0 ]]; then
        apt-get install -y "$PKG" >&2 || { apt-get update >&2 && apt-get install -y "$PKG" >&2; }
    else
        sudo apt-get install -y "$PKG" >&2
    fi
fi
mkdir -p "$DEST"
find "$SRC" -maxdepth 1 -type f -name '*.html' -print0 |
    while IFS= read -r -d '' f; do
        name=$(basename "$f")
        for x in "${EXCLUDE[@]}"; do [[ "$name" == "$x" ]] && continue 2; done
        cp -p "$f" "$DEST"/
    done
count=$(find "$DEST" -maxdepth 1 -type f -name '*.html' | wc -l)
echo "make_folder: $count HTML files from $(dpkg-query -W -f="$PKG \${Version}" "$PKG" 2>/dev/null || echo "$SRC")" >&2
echo "$DEST"
