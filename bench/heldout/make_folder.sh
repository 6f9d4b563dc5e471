#!/usr/bin/env bash
# Build the held-out documentation folder (issue 13): the Git manual pages as HTML, from
# the Debian package git-doc (installed here if missing, as the later sets' scripts do).
# Copies the regular *.html files at the top of /usr/share/doc/git-doc (205 files, ~8 MB;
# not the index.html symlink, not the technical/ and howto/ subfolders, not the .txt
# AsciiDoc sources) into DEST (default bench/out/heldout/git-doc, gitignored) and prints DEST.
#
#   bench/heldout/make_folder.sh [DEST]
set -euo pipefail

SRC=/usr/share/doc/git-doc
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout/git-doc}"
if [[ ! -f "$SRC/git-gc.html" ]]; then
    echo "make_folder: $SRC/git-gc.html is missing: installing git-doc" >&2
    if [[ $(id -u) -eq 0 ]]; then
        apt-get install -y git-doc >&2 || { apt-get update >&2 && apt-get install -y git-doc >&2; }
    else
        sudo apt-get install -y git-doc >&2
    fi
fi
mkdir -p "$DEST"
find "$SRC" -maxdepth 1 -type f -name '*.html' -exec cp -p {} "$DEST"/ \;
count=$(find "$DEST" -maxdepth 1 -type f -name '*.html' | wc -l)
echo "make_folder: $count HTML files from $(dpkg-query -W -f='git-doc ${Version}' git-doc 2>/dev/null || echo "$SRC")" >&2
echo "$DEST"
