#!/usr/bin/env bash
# Build the tenth held-out documentation folder: the Wireshark 4.0.17 documentation, the
# Wireshark User's Guide and the Wireshark Developer's Guide as chunked (one section per
# page) AsciiDoc/DocBook HTML, from the Debian package wireshark-doc (installed here if
# missing, without recommends; it does not need wireshark itself). doxygen-doc,
# xapian-doc, gnuplot-doc, gettext-doc, shorewall-doc, nodejs-doc, mypy-doc and a few more
# were looked at and not used (see README.md). Copies every *.html file below
# /usr/share/doc/wireshark, subfolders kept (311 files: wsug_html_chunked/, the User's
# Guide, 190 pages: installing, the user interface, capturing, file input and output,
# working with packets, advanced topics, statistics, telephony, wireless, customizing,
# MATE, the messages, files and folders, protocols and fields and the command line tools
# in appendices; wsdg_html_chunked/, the Developer's Guide, 121 pages: setting up, the
# sources, the tools and libraries, how Wireshark works, capture, dissection, Lua and its
# API reference, the user interface, the tests, ASN.1 dissectors) except four pages that
# hold only navigation:
# - wsug_html_chunked/index.html and wsdg_html_chunked/index.html: the title pages, the
#   title, version and authors and then the tables of contents, figures, tables and
#   examples of the whole guide (only links);
# - wsdg_html_chunked/PartEnvironment.html and wsdg_html_chunked/PartDevelopment.html:
#   the title pages of the Developer's Guide's two parts, one sentence and the table of
#   contents of the part (only links).
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes
# this script fail, to be added to EXCLUDE). The images of images/ are left out. 307
# files, into DEST (default bench/out/heldout10/wireshark-doc, gitignored); prints DEST.
#
#   bench/heldout10/make_folder.sh [DEST]
set -euo pipefail

PKG=wireshark-doc
SRC=/usr/share/doc/wireshark
EXCLUDE=(wsug_html_chunked/index.html wsdg_html_chunked/index.html
    wsdg_html_chunked/PartEnvironment.html wsdg_html_chunked/PartDevelopment.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout10/wireshark-doc}"

MARKER=wsug_html_chunked/ChapterIntroduction.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)
check_no_duplicates
echo "$dest"
