"""Shows the docs' marked code blocks as the plain code they are.

tests/test_docs.py runs the README's and the docs' code blocks and tells them apart by a
second word in the fence (``sh not-run``, ``python pytest``). Python-Markdown's fences take
a language alone, so such a block would reach the page as text and swallow what follows;
the build drops the marker before rendering.
"""

from __future__ import annotations

import re

_MARKED_FENCE = re.compile(r"^(\s*```[A-Za-z0-9_+-]+)[ \t]+[a-z-]+[ \t]*$", re.MULTILINE)


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    return _MARKED_FENCE.sub(r"\1", markdown)
