#!/usr/bin/env bash
# Build the sixth held-out documentation folder: the Exim 4.96 documentation ("Specification
# of the Exim Mail Transfer Agent" and "Exim's interfaces to mail filtering"), as HTML, from
# the Debian package exim4-doc-html (installed here if missing, without recommends; it does
# not need the exim4 server). bind9-doc was looked at first and not used: it has 16 HTML
# pages of prose (the BIND 9 ARM split into a few very large pages), too few for a folder.
# Copies every regular *.html file of /usr/share/doc/exim4-doc-html/spec_html (70 files: one
# page per chapter of the specification, ch-introduction.html to
# ch-dkim_spf_srs_and_dmarc.html, with the main configuration options and their defaults,
# the routers, transports, authenticators, ACLs, string expansions, lookups, retry rules,
# log files, utilities; the three chapters of the filter manual, filter_ch-*.html; the two
# tables of contents index.html and filter.html) except the three index chapters, which
# hold no prose, only navigation: ch-concept_index.html, ch-option_index.html and
# ch-variable_index.html (lists of terms, each followed by the names of the sections that
# use it). The package's 68 symbolic links (ch01.html to ch65.html, filter_ch01.html to
# filter_ch03.html: a second name for each chapter page) are not regular files and are not
# copied. The copied pages are checked for byte-identical duplicates (there are none; a
# duplicate makes this script fail, to be added to EXCLUDE). The stylesheets, images and
# XML tables of contents are left out. 67 files, 2.8 MB of HTML (1.8 MB of extracted text),
# into DEST (default bench/out/heldout6/exim4-doc-html, gitignored); prints DEST.
#
#   bench/heldout6/make_folder.sh [DEST]
set -euo pipefail

PKG=exim4-doc-html
SRC=/usr/share/doc/exim4-doc-html/spec_html
EXCLUDE=(ch-concept_index.html ch-option_index.html ch-variable_index.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout6/exim4-doc-html}"

MARKER=ch-main_configuration.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)

check_no_duplicates
echo "$dest"
