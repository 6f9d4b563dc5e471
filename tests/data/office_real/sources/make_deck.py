"""The source of kestrel_deck.odp: python-pptx writes a .pptx with title and body
placeholders, a table and speaker notes; LibreOffice Impress converts it to .odp."""
import sys

from pptx import Presentation
from pptx.util import Cm

prs = Presentation()
s = prs.slides.add_slide(prs.slide_layouts[0])
s.shapes.title.text = "Kestrel Pilot Review"
s.placeholders[1].text = "Operations team, autumn 2026"
s = prs.slides.add_slide(prs.slide_layouts[1])
s.shapes.title.text = "Sites"
body = s.placeholders[1].text_frame
body.text = "Calder Bay depot"
p = body.add_paragraph()
p.text = "Pier Road hub"
p = body.add_paragraph()
p.text = "two loading bays"
p.level = 1
s = prs.slides.add_slide(prs.slide_layouts[5])
s.shapes.title.text = "Launch plan"
box = s.shapes.add_textbox(Cm(2), Cm(5), Cm(20), Cm(2))
box.text_frame.text = "The Kestrel pilot goes live on 14 October 2026 at the Calder Bay depot."
t = s.shapes.add_table(2, 2, Cm(2), Cm(9), Cm(16), Cm(3)).table
for r, row in enumerate([("Milestone", "Owner"), ("Driver training", "Ilse Marrow")]):
    for c, v in enumerate(row):
        t.cell(r, c).text = v
s.notes_slide.notes_text_frame.text = (
    "Remind the board that the pilot budget is capped at 90,000 euros.")
prs.core_properties.title = "Kestrel Pilot Review"
prs.save(sys.argv[1] if len(sys.argv) > 1 else "kestrel_deck.pptx")
