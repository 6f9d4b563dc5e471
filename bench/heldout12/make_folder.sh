#!/usr/bin/env bash
# Build the twelfth held-out documentation folder: the Open vSwitch 3.1 documentation, as
# Sphinx HTML, from the Debian package openvswitch-doc (installed here if missing, without
# recommends; it does not need openvswitch-switch or any other part of Open vSwitch).
# tomcat10-docs was looked at again and not used (see README.md). Copies every *.html
# file below /usr/share/doc/openvswitch-doc/html, subfolders kept (122 files: intro/, what
# Open vSwitch is and how to install it from source and from packages on Linux, Windows,
# NetBSD and with DPDK or AF_XDP; tutorials/, the Faucet, IPsec, advanced features and
# conntrack tutorials; howto/, one task each (DPDK, IPsec, KVM, libvirt, LISP, QoS,
# SELinux, sFlow, SSL, TC offload, tunnels, VLANs, VTEP); topics/, the deep dives (bonding,
# the datapath, the design, OVSDB relay and replication, DPDK, fuzzing, testing, tracing,
# USDT probes, Windows, ...); ref/, the man pages written in rST (ovs-actions(7),
# ovsdb(7), ovsdb-server(7), ovs-ctl(8), ovs-pki(8), ovs-appctl(8), ...); faq/, twelve FAQ
# pages; internals/, the project's community, contributing and governance pages) except
# four Sphinx pages that hold no prose, only navigation:
# - search.html (the search box stub) and genindex.html (the general index, only links);
# - contents.html (the table of contents of the whole documentation, only links);
# - index.html (the front page: section names and links, no sentence).
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes
# this script fail, to be added to EXCLUDE). The reStructuredText sources of _sources/
# (*.txt), the stylesheets, scripts and images of _static/ and _images/, objects.inv and
# searchindex.js are left out (not HTML). 118 files, 3.08 MB of HTML (1.08 MB of extracted
# text), into DEST (default bench/out/heldout12/openvswitch-doc, gitignored); prints DEST.
#
#   bench/heldout12/make_folder.sh [DEST]
set -euo pipefail

PKG=openvswitch-doc
SRC=/usr/share/doc/openvswitch-doc/html
EXCLUDE=(search.html genindex.html contents.html index.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout12/openvswitch-doc}"

MARKER=faq/releases.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)
check_no_duplicates
echo "$dest"
