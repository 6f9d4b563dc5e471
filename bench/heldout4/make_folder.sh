#!/usr/bin/env bash
# Build the fourth held-out documentation folder: the Postfix 3.7 documentation, as HTML,
# from the Debian package postfix-doc (installed here if missing, without recommends; it
# does not need the postfix server). Copies every *.html file of
# /usr/share/doc/postfix/html (136 files: the README guides such as BASIC_CONFIGURATION,
# TLS, SASL, POSTSCREEN, TUNING, SCHEDULER; the manual pages of the commands (section 1),
# file formats (section 5, postconf.5.html with every main.cf parameter and its default)
# and daemons (section 8); index.html and postfix-manuals.html) except five byte-identical
# copies of other pages: defer.8.html and trace.8.html (= bounce.8.html), lmtp.8.html
# (= smtp.8.html), mailq.1.html and newaliases.1.html (= sendmail.1.html). The two images
# and the plain-text README files of /usr/share/doc/postfix are left out. 131 files,
# 3.4 MB of HTML (2.5 MB of extracted text), into DEST (default
# bench/out/heldout4/postfix-doc, gitignored); prints DEST.
#
#   bench/heldout4/make_folder.sh [DEST]
set -euo pipefail

PKG=postfix-doc
SRC=/usr/share/doc/postfix/html
EXCLUDE=(defer.8.html trace.8.html lmtp.8.html mailq.1.html newaliases.1.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout4/postfix-doc}"

if [[ ! -f "$SRC/postconf.5.html" ]]; then
    echo "make_folder: $SRC/postconf.5.html is missing: installing $PKG" >&2
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
