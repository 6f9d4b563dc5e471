#!/bin/sh
# Regenerate the documents of tests/data/office_real/ from these sources (needs pandoc,
# LibreOffice and the project's .venv for python-pptx). Run from this folder:
#   sh make.sh
# Each run stamps new dates inside the files, so only regenerate to change a fixture.
set -e
out=..
pandoc freight.md -o "$out/freight_pandoc.docx"
pandoc freight.md -o "$out/freight_pandoc.odt"
pandoc book.md -o "$out/harbor_stories.epub"
soffice --headless --convert-to docx --outdir "$out" harbor_ops.fodt
soffice --headless --convert-to odt --outdir "$out" harbor_ops.fodt
soffice --headless --convert-to doc --outdir "$out" harbor_ops.fodt
soffice --headless --convert-to ods --outdir "$out" inventory.fods
soffice --headless --convert-to xls --outdir "$out" inventory.fods
tmp=$(mktemp -d)
"${PYTHON:-../../../../.venv/bin/python}" make_deck.py "$tmp/kestrel_deck.pptx"
soffice --headless --convert-to odp --outdir "$out" "$tmp/kestrel_deck.pptx"
rm -rf "$tmp"
