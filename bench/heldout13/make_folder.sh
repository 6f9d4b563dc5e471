#!/usr/bin/env bash
# Build the thirteenth held-out documentation folder: the NTPsec 1.2.2 documentation (the
# Network Time Protocol daemon ntpd and its tools), as AsciiDoc HTML, from the Debian package
# ntpsec-doc (installed here if missing, without recommends; it depends on nothing, not on
# ntpsec itself). Copies every *.html file of /usr/share/doc/ntpsec-doc/html (87 files, one
# flat folder; the site map groups them as: build and install, the client and NTS quick
# start guides, debugging and bug reporting; the manual pages, ntp.conf(5), ntp.keys(5),
# ntpd(8), ntpq(1), ntpdig(1), ntpkeygen(8), ntpmon(1), ntpviz(1), ntpwait(8), ...; the
# handbook pages, the command index and the configuration option pages, access control,
# associations, authentication, server discovery, rate management; the reference clock
# support pages and the refclock driver pages driver_*.html; the miscellaneous pages,
# glossary, event messages, the kernel model, the log messages, PPS; the special topics,
# how NTP works, the clock filter, select, cluster and discipline algorithms, orphan mode,
# leap seconds and leap smearing, rollover) except two pages that hold no prose:
# - 404.html (the web site's "Page not found" stub: a heading and the date);
# - sitemap.html (the site map: only links, under a quotation).
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes
# this script fail, to be added to EXCLUDE). The stylesheet, the script, the icons of
# icons/ and the pictures of pic/ are left out (not HTML). 85 files, 1.32 MB of HTML (0.72
# MB of extracted text), into DEST (default bench/out/heldout13/ntpsec-doc, gitignored);
# prints DEST.
#
#   bench/heldout13/make_folder.sh [DEST]
set -euo pipefail

PKG=ntpsec-doc
SRC=/usr/share/doc/ntpsec-doc/html
EXCLUDE=(404.html sitemap.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout13/ntpsec-doc}"

MARKER=ntp_conf.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)
check_no_duplicates
echo "$dest"
