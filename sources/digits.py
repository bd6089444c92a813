"""Numbers in upstream text: ASCII digits, and nothing else that Python reads as one.

``str.isdigit`` holds for every Unicode digit, and ``int`` reads many of them: ``"١٢٣"`` (in
Arabic-Indic digits) is 123, so an identity checked that way names the record ``123`` as
well; ``"²"`` passes ``isdigit`` and then makes ``int`` raise where the text should have been
refused as not a number. Upstream text is checked here before it is read as a number.
"""

from __future__ import annotations


def is_ascii_digits(text: str) -> bool:
    """Whether ``text`` is one or more of ``0``-``9`` and nothing else."""
    return text.isascii() and text.isdigit()
