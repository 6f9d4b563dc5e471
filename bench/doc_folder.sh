# Sourced by the held-out sets' make_folder.sh: copy_doc_pages installs a Debian
# documentation package if its marker page is missing (without recommends) and copies
# every *.html below SRC into DEST, subfolders kept, but the EXCLUDE paths (relative to
# SRC); it prints the count and the package version on stderr and DEST on stdout.
#
#   PKG=... SRC=... MARKER=rel/page.html EXCLUDE=(...) DEST=...; copy_doc_pages
copy_doc_pages() {
    if [[ ! -f "$SRC/$MARKER" ]]; then
        echo "make_folder: $SRC/$MARKER is missing: installing $PKG" >&2
        local install=(apt-get install -y --no-install-recommends "$PKG")
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
    local count
    count=$(find "$DEST" -type f -name '*.html' | wc -l)
    echo "make_folder: $count HTML files from $(dpkg-query -W -f="$PKG \${Version}" "$PKG" \
        2>/dev/null || echo "$SRC")" >&2
    echo "$DEST"
}

# Fails (exit 1) when DEST holds byte-identical pages: a duplicate is to be added to
# EXCLUDE (all but one of each), so that no page is in the folder twice.
check_no_duplicates() {
    local dups
    dups=$(cd "$DEST" && find . -type f -name '*.html' -exec md5sum {} + | sort |
        uniq -w32 -D | awk '{print $2}')
    if [[ -n "$dups" ]]; then
        echo "make_folder: byte-identical pages (exclude all but one of each):" $dups >&2
        exit 1
    fi
}
