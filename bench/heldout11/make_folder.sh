#!/usr/bin/env bash
# Build the eleventh held-out documentation folder: the ProFTPD 1.3.8 documentation, the
# HTML pages of the ProFTPD FTP server (the howtos, the core and contributed modules'
# directive references and the FAQ), from the Debian package proftpd-doc (installed here
# if missing, without recommends; it does not need the proftpd server itself).
# openvswitch-doc, tomcat10-docs, pgpool2, slony1-2-doc, cython-doc, libpam-doc and a few
# more were looked at and not used (see README.md). Copies every *.html file below
# /usr/share/doc/proftpd-doc, subfolders kept (131 files: howto/, 56 pages, one topic
# each; modules/, 21 pages, the core modules and their directives; contrib/, 51 pages, the
# contributed modules and scripts and their directives; faq.html; index.html and
# directives/index.html) except two pages that hold only navigation:
# - index.html: one sentence and six links (the directive list, the howtos, the modules,
#   the FAQ);
# - directives/index.html: the list of every configuration directive, each a link to its
#   module's page (only links).
# The index pages of howto/, modules/ and contrib/ are kept: each link there comes with a
# sentence saying what the page covers. The folder has no byte-identical duplicates
# (checked on every run: a duplicate makes this script fail, to be added to EXCLUDE). The
# text files (RELEASE_NOTES.gz, NEWS.gz, misc/*.txt, README.*) and the sample
# configurations of examples/ are left out (not HTML). 129 files, into DEST (default
# bench/out/heldout11/proftpd-doc, gitignored); prints DEST.
#
#   bench/heldout11/make_folder.sh [DEST]
set -euo pipefail

PKG=proftpd-doc
SRC=/usr/share/doc/proftpd-doc
EXCLUDE=(index.html directives/index.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout11/proftpd-doc}"

MARKER=howto/ConfigFile.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)
check_no_duplicates
echo "$dest"
