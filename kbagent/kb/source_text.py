"""A source file's bytes as text, and the two ways extraction declines a file.

Below both :mod:`kbagent.kb.extract` and the rich formats
(:mod:`kbagent.kb.formats`), which raise these and decode with this."""

from __future__ import annotations

import codecs


class Skip(Exception):
    """The file is deliberately not ingested; the message is the reason."""


class ExtractError(Exception):
    """The file looked ingestible but could not be parsed; the message is why."""


def decode_text(data: bytes) -> str:
    """Decode UTF-8 (with or without BOM) or BOM-marked UTF-16; otherwise :class:`Skip`."""
    if b"\x00" in data[:8192] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise Skip("binary content (NUL bytes)")
    try:
        if data.startswith(codecs.BOM_UTF8):
            return data[3:].decode("utf-8")
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Skip(f"not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})") from e
