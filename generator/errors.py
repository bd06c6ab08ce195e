"""The one error type the generator raises for a bad spec, formatted as one line."""

from __future__ import annotations


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
