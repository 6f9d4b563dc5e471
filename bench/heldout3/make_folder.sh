#!/usr/bin/env bash
# Build the third held-out documentation folder (issue 22): the Apache HTTP Server 2.4
# documentation in English, as HTML, from the Debian package apache2-doc (installed here if
# missing, without its recommended apache2 server). Copies every *.html file under
# /usr/share/doc/apache2-doc/manual/en (244 files, keeping the subfolders mod/, howto/,
# programs/, rewrite/, ssl/, vhosts/, misc/, faq/, platform/, developer/) except four
# generated pages that only restate the others: sitemap.html (the link list of the whole
# manual), mod/directives.html (the A-Z directive index), mod/quickreference.html (a table
# of every directive with its syntax, default, context and status: the "Default:" lines of
# every module page again) and mod/overrides.html (every directive listed again by its
# AllowOverride class). The other languages (de, es, fr, ja, ko, pt-br, tr, zh-cn), images
# and CSS are left out. 240 files, 5.8 MB of HTML (2.6 MB of extracted text), into DEST (default
# bench/out/heldout3/apache2-doc, gitignored); prints DEST.
#
#   bench/heldout3/make_folder.sh [DEST]
set -euo pipefail

PKG=apache2-doc
SRC=/usr/share/doc/apache2-doc/manual/en
EXCLUDE=(sitemap.html mod/directives.html mod/quickreference.html mod/overrides.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout3/apache2-doc}"

if [[ ! -f "$SRC/mod/core.html" ]]; then
    echo "make_folder: $SRC/mod/core.html is missing: installing $PKG" >&2
    install=(apt-get install -y --no-install-recommends "$PKG")
    if [[ $(id -u) -eq 0 ]]; then
        "${install[@]}" >&2 || { apt-get update >&2 && "${install[@]}" >&2; }
    else
        sudo "${install[@]}" >&2
    fi
fi
mkdir -p "$DEST"
(cd "$SRC" && find . -type f -name '*.html' -print0) |
    while IFS= read -r -d '' f; do
        rel=${f#./}
        for x in "${EXCLUDE[@]}"; do [[ "$rel" == "$x" ]] && continue 2; done
        mkdir -p "$DEST/$(dirname "$rel")"
        cp -p "$SRC/$rel" "$DEST/$rel"
    done
count=$(find "$DEST" -type f -name '*.html' | wc -l)
echo "make_folder: $count HTML files from $(dpkg-query -W -f="$PKG \${Version}" "$PKG" 2>/dev/null || echo "$SRC")" >&2
echo "$DEST"
