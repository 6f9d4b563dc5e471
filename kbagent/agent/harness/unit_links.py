"""How units of an entry read together: an entry's row (its name, type and default) and
the description below it, a sentence and the line it leads into. The final turn quotes
them side by side (:mod:`kbagent.agent.harness.final_turn`)."""

from __future__ import annotations

from kbagent.agent.answer.unit_lines import VERSION_NOTE
from kbagent.agent.answer.units import Unit, UnitKind


def entry_of(unit: Unit, units: list[Unit]) -> Unit | None:
    """The header row of the entry ``unit`` describes ("message_size_limit; Use: main;
    Type: string; Default: 50M" above "This option limits the maximum size ..."), if it
    is the first sentence of such a description."""
    for back in (1, 2):  # a version note may stand between them
        before = [u for u in units if u.position == unit.position - back]
        if before and before[0].kind is UnitKind.ROW and before[0].gloss == unit.text:
            return before[0]
        if not (before and VERSION_NOTE.match(before[0].text)):
            return None
    return None


def description_of(unit: Unit, units: list[Unit]) -> Unit | None:
    """The first sentence of the description an entry's row ``unit`` is read with (the
    inverse of :func:`entry_of`): "Specifies how long rsyslog must wait ..." for
    "type: integer; default: 10000; ..." under "confirmTimeout"."""
    if unit.kind is not UnitKind.ROW or not unit.gloss:
        return None
    after = [u for u in units if u.position in (unit.position + 1, unit.position + 2)
             and u.text == unit.gloss]
    return after[0] if after else None


LED_ITEM_CHARS = 160  # an item a sentence leads into that is quoted with it


def led_item(unit: Unit, units: list[Unit]) -> Unit | None:
    """The short line a sentence ending in ":" leads into ("... and under [Service]
    add:" / "LimitNOFILE=<new value>."): what the sentence says to do or type, read as
    led by it (the next section's first line is not)."""
    if not unit.text.rstrip().endswith(":"):
        return None
    after = [u for u in units if u.position == unit.position + 1]
    if after and len(after[0].text) <= LED_ITEM_CHARS and not after[0].text.endswith(":") \
            and after[0].trail == unit.trail and unit.text[-40:] in after[0].context:
        return after[0]
    return None
