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

MARKER=postconf.5.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
copy_doc_pages
