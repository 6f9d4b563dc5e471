#!/usr/bin/env bash
# Build the eighth held-out documentation folder: the Sphinx 5.3.0 documentation, as Sphinx
# HTML, from the Debian package sphinx-doc (installed here if missing, without recommends;
# it does not need python3-sphinx). borgbackup-doc, knot-doc, knot-resolver-doc, kea-doc,
# cmake-doc and icinga2-doc were looked at and not used (see README.md). Copies every *.html
# file below /usr/share/doc/sphinx-doc/html, subfolders kept (137 files: usage/ with the
# configuration values, the builders, the reStructuredText markup, the domains and one page
# per built-in extension, tutorial/, development/, extdev/ (the extension API), man/ (the
# command-line tools), internals/, latex.html, templating.html, faq.html, glossary.html,
# changes.html, examples.html, index.html and a few other top-level pages) except:
# - four Sphinx pages that hold no prose, only navigation: search.html (the search box
#   stub), genindex.html (the general index), py-modindex.html (the Python module index)
#   and contents.html (the table of contents of the whole documentation, only links);
# - _modules/ (40 pages): the highlighted Python source code of Sphinx's own modules
#   (sphinx.ext.viewcode's "[source]" pages), program code rather than documentation.
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes this
# script fail, to be added to EXCLUDE). The reStructuredText sources of _sources/ (*.txt),
# the stylesheets, scripts and images of _static/ and _images/ and the files of _downloads/
# are left out. 93 files, 4.4 MB of HTML (1.18 MB of extracted text), into DEST (default
# bench/out/heldout8/sphinx-doc, gitignored); prints DEST.
#
#   bench/heldout8/make_folder.sh [DEST]
set -euo pipefail

PKG=sphinx-doc
SRC=/usr/share/doc/sphinx-doc/html
M=_modules
EXCLUDE=(search.html genindex.html py-modindex.html contents.html
    $M/index.html $M/docutils/parsers/rst.html
    $M/sphinx/addnodes.html $M/sphinx/application.html $M/sphinx/builders.html
    $M/sphinx/builders/changes.html $M/sphinx/builders/dirhtml.html
    $M/sphinx/builders/dummy.html $M/sphinx/builders/epub3.html
    $M/sphinx/builders/gettext.html $M/sphinx/builders/html.html
    $M/sphinx/builders/latex.html $M/sphinx/builders/linkcheck.html
    $M/sphinx/builders/manpage.html $M/sphinx/builders/singlehtml.html
    $M/sphinx/builders/texinfo.html $M/sphinx/builders/text.html
    $M/sphinx/builders/xml.html $M/sphinx/config.html $M/sphinx/directives.html
    $M/sphinx/domains.html $M/sphinx/domains/python.html $M/sphinx/environment.html
    $M/sphinx/environment/collectors.html $M/sphinx/errors.html $M/sphinx/events.html
    $M/sphinx/ext/autodoc.html $M/sphinx/ext/coverage.html $M/sphinx/locale.html
    $M/sphinx/parsers.html $M/sphinx/project.html $M/sphinx/transforms.html
    $M/sphinx/transforms/post_transforms.html
    $M/sphinx/transforms/post_transforms/images.html
    $M/sphinx/util/docutils.html $M/sphinx/util/logging.html
    $M/sphinxcontrib/serializinghtml.html $M/sphinxcontrib/websupport/core.html
    $M/sphinxcontrib/websupport/search.html $M/sphinxcontrib/websupport/storage.html)
DEST="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout8/sphinx-doc}"

MARKER=usage/configuration.html
# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"
dest=$(copy_doc_pages)

if [[ -d "$DEST/$M" ]] && [[ -n $(find "$DEST/$M" -type f -name '*.html') ]]; then
    echo "make_folder: pages of $M were copied (a later package version has new ones: add" \
        "them to EXCLUDE):" $(cd "$DEST" && find "$M" -type f -name '*.html') >&2
    exit 1
fi
check_no_duplicates
echo "$dest"
