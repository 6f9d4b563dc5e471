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

MARKER=mod/core.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
copy_doc_pages
