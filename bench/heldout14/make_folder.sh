#!/usr/bin/env bash
# Build the fourteenth held-out documentation folder: the Clang 15 documentation (the C,
# C++ and Objective-C compiler of the LLVM project and its tools), as Sphinx HTML, from the
# Debian package clang-15-doc (installed here if missing, without recommends; it depends
# only on libjs-mathjax, not on clang-15 itself). Copies every *.html file below
# /usr/share/doc/clang-15/html, subfolders kept (89 files; the front page groups them as:
# using Clang as a compiler, the user's manual, the toolchain, the language extensions,
# the command line reference, cross-compilation, the sanitizers, control flow integrity,
# SafeStack, ShadowCallStack, source-based code coverage, C++ modules and Clang modules,
# MSVC compatibility, OpenCL, OpenMP, SYCL, HLSL, ThinLTO, API notes, coroutines, the man
# pages of CommandGuide/ and the FAQ; using Clang as a library, LibTooling, LibFormat,
# plugins, the AST matchers, Transformer, the ASTImporter, the JSON compilation database,
# the refactoring engine; the Clang tools, ClangCheck, clang-format and its style options,
# the linker, nvlink and offload wrappers, the offload bundler and packager; the design
# documents, the internals manual, the driver, offloading, precompiled headers, ABI tags,
# the HWASan design, the constant interpreter; and the static analyzer's pages of
# analyzer/, its checkers, cross translation unit and taint analysis, its developer notes)
# except six pages that hold no prose:
# - search.html (the search box stub) and genindex.html (the general index, only links);
# - index.html (the front page: section names and links, no sentence);
# - analyzer/user-docs.html and analyzer/developer-docs.html (the static analyzer's two
#   tables of contents, only links);
# - ClangFormattedStatus.html (a generated table of the LLVM source tree's directories
#   with their counts of clang-formatted files, March 2022: one sentence, then numbers).
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes
# this script fail, to be added to EXCLUDE). The reStructuredText sources of _sources/
# (*.txt), the stylesheets, scripts and images of _static/ and _images/, objects.inv and
# searchindex.js are left out (not HTML). 83 files, 5.35 MB of HTML (1.76 MB of extracted
# text), into DEST (default bench/out/heldout14/clang-15-doc, gitignored); prints DEST.
#
#   bench/heldout14/make_folder.sh [DEST]
set -euo pipefail

PKG=clang-15-doc
SRC=/usr/share/doc/clang-15/html
EXCLUDE=(search.html genindex.html index.html analyzer/user-docs.html
    analyzer/developer-docs.html ClangFormattedStatus.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout14/clang-15-doc}"

MARKER=UsersManual.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)
check_no_duplicates
echo "$dest"
