"""The one error type the generator raises for a bad spec, formatted as one line."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


class SpecError(Exception):
    """A spec breaks a rule: names the file, the path inside it, the rule and the value.

    ``str(err)`` is one line: ``FILE: PATH: RULE (got VALUE)``.
    """

    def __init__(self, file: str, path: str, rule: str, value: object = None) -> None:
        self.file = file
        self.path = path
        self.rule = rule
        self.value = value
        super().__init__(self.line())

    def line(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        got = "" if self.value is None else f" (got {self.value!r})"
        return f"{where}: {self.rule}{got}"


class SpecErrors(Exception):
    """Several rejections at once; each is still one line."""

    def __init__(self, errors: list[SpecError]) -> None:
        self.errors = errors
        super().__init__("\n".join(e.line() for e in errors))


class SpecWarning(UserWarning):
    """A spec uses a form an older Kafka generator accepted and today's refuses.

    The spec still loads, read as that older generator read it; the text is one line like
    :class:`SpecError`'s, naming the file, the path and the rule.
    """


def warn(file: str, path: str, rule: str, value: object = None) -> None:
    """Issue a :class:`SpecWarning` worded like a :class:`SpecError`."""
    warnings.warn(SpecError(file, path, rule, value).line(), SpecWarning, stacklevel=3)


@contextmanager
def report_spec_warnings() -> Iterator[None]:
    """Print each :class:`SpecWarning` raised inside as one ``warning:`` line on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecWarning)
        try:
            yield
        finally:
            for w in caught:
                if issubclass(w.category, SpecWarning):
                    print(f"warning: {w.message}", file=sys.stderr)
                else:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
