"""Run the generator: specs in, a formatted Python package out.

Everything is rendered and formatted in memory first; only then is the output folder
replaced (``output.write_package``), so a bad spec or a template error never leaves a
half-written package.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import black
import black.mode
import black.parsing
import jinja2

from .emit import Emitter, module_name
from .errors import SpecError, SpecErrors
from .loader import load_spec, spec_files
from .model import Message, build_message

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = PACKAGE_ROOT / "templates"
BUILTIN_SPECS = PACKAGE_ROOT / "message_specs"
#: The coordinators' records (``__consumer_offsets``, ``__transaction_state``), kept apart
#: so importing a release's client specs never prunes them.
BUILTIN_RECORD_SPECS = BUILTIN_SPECS / "records"
#: What ``kafkagen generate`` reads by default.
BUILTIN_SPEC_DIRS = (BUILTIN_SPECS, BUILTIN_RECORD_SPECS)
BUILTIN_OUT = PACKAGE_ROOT / "generated"

BLACK_MODE = black.Mode(line_length=100, target_versions={black.mode.TargetVersion.PY311})


def _pyrepr(value: Any) -> str:
    """A Python literal, with strings and bytes double-quoted as black writes them."""
    text = repr(value)
    prefix = "b" if isinstance(value, bytes) else ""
    body = text[len(prefix) + 1 : -1]
    if isinstance(value, str | bytes) and text[len(prefix)] == "'" and '"' not in body:
        text = prefix + '"' + body.replace("\\'", "'") + '"'
    return text


def _docstring(text: str) -> str:
    """Spec prose made safe inside a triple-quoted docstring."""
    return " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"').rstrip('"')


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["pyrepr"] = _pyrepr
    env.filters["docstring"] = _docstring
    return env


@dataclass
class Module:
    name: str
    messages: list[Message]


def load_messages(spec_dirs: Iterable[Path]) -> list[Message]:
    """Load, check and model every spec file of the given folders."""
    from . import validate  # imported late: validation is optional for a model-only load

    docs: dict[str, dict[str, Any]] = {}
    errors: list[SpecError] = []
    for d in spec_dirs:
        if not d.is_dir():
            raise SpecErrors([SpecError(str(d), "", "spec folder does not exist")])
        for path in spec_files(d):
            try:
                raw = load_spec(path)
                if path.name in docs:
                    raise SpecError(path.name, "", "spec file name given twice")
                docs[path.name] = validate.validate_document(raw, path.name)
            except SpecError as e:
                errors.append(e)
            except SpecErrors as e:
                errors.extend(e.errors)
    if not errors:
        try:
            validate.validate_directory(docs)
        except SpecErrors as e:
            errors.extend(e.errors)
    if errors:
        raise SpecErrors(errors)
    return [build_message(doc, file) for file, doc in docs.items()]


def group_modules(messages: list[Message]) -> list[Module]:
    """One module per API (request and response together), one per other spec."""
    modules: dict[str, Module] = {}
    for m in sorted(messages, key=lambda m: (m.api_key is None, m.api_key or 0, m.name)):
        name = module_name(m.name) if m.api_key is not None else _snake(m.name)
        if m.kind == "header":
            name = "headers"
        modules.setdefault(name, Module(name, [])).messages.append(m)
    for mod in modules.values():
        mod.messages.sort(key=lambda m: {"request": 0, "response": 1}.get(m.kind, 2))
    return sorted(modules.values(), key=lambda mod: mod.name)


def _snake(name: str) -> str:
    from .model import snake_case

    return snake_case(name).rstrip("_")


def render_module(env: jinja2.Environment, mod: Module) -> str:
    seen: dict[str, int] = {}
    for m in mod.messages:
        for name in {s.name for s in m.structs} | {m.name}:
            seen[name] = seen.get(name, 0) + 1
    shared = frozenset(n for n, count in seen.items() if count > 1)
    rt = RuntimeImports()
    contexts = [Emitter(m, shared, rt).context() for m in mod.messages]
    formats = sorted(set().union(*(c["formats"] for c in contexts)))
    arrays = sorted(set().union(*(c["arrays"] for c in contexts)))
    first = mod.messages[0]
    if first.api_key is not None:
        base = first.name.removesuffix("Request").removesuffix("Response")
        title = f"{base} (API key {first.api_key}): request and response codecs."
    else:
        title = f"{', '.join(m.name for m in mod.messages)} codecs."
    # One render: the template writes the module's body first and its imports last, from
    # the names ``rt`` recorded as the body used them.
    return env.get_template("module.py.jinja").render(
        rt=rt,
        title=title,
        sources=[m.file for m in mod.messages],
        messages=contexts,
        formats=formats,
        arrays=arrays,
    )


def _importable() -> dict[str, str]:
    """Each name generated code may import -> its module: every public name of the runtime
    modules it uses, and the standard library's it needs only sometimes (``typing.Any``
    and ``ClassVar`` serve every module and are always imported)."""
    from kafkagen.runtime import jsonform, message, wire

    names = {"_Struct": "struct", "UUID": "uuid"}
    for module in (jsonform, message, wire):
        names.update((name, module.__name__) for name in module.__all__)
    return names


IMPORTABLE = _importable()


class RuntimeImports:
    """The names one generated module imports, recorded where the templates and the emitter
    write them: ``rt("read_string")`` returns the name and notes its import."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, name: str) -> str:
        if name not in IMPORTABLE:
            raise jinja2.TemplateRuntimeError(f"generated code cannot import {name!r}")
        self.used.add(name)
        return name

    def uses(self, name: str) -> bool:
        return name in self.used

    def imports(self) -> list[tuple[str, list[str]]]:
        """(module, sorted names) for each kafkagen module the recorded names come from."""
        by_module: dict[str, list[str]] = {}
        for name in sorted(self.used):
            module = IMPORTABLE[name]
            if module.startswith("kafkagen."):
                by_module.setdefault(module, []).append(name)
        return sorted(by_module.items())


def render_package(messages: list[Message]) -> dict[str, str]:
    """File name -> formatted source, for the whole generated package."""
    env = environment()
    modules = group_modules(messages)
    files: dict[str, str] = {}
    for mod in modules:
        files[f"{mod.name}.py"] = render_module(env, mod)
    files["__init__.py"] = env.get_template("registry.py.jinja").render(modules=modules)
    names = sorted(files, key=lambda n: -len(files[n]))  # largest first balances workers
    workers = min(len(names), os.cpu_count() or 1)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            formatted = list(pool.map(_format, names, (files[n] for n in names), chunksize=1))
    else:
        formatted = [_format(n, files[n]) for n in names]
    out = dict(zip(names, formatted, strict=True))
    out["py.typed"] = ""
    return dict(sorted(out.items()))


def _format(name: str, text: str) -> str:
    """One generated module as black formats it (runs in a worker process).

    The templates write code black leaves as it is, each statement on one line, except
    that they leave statements longer than a line to black: those, and only those, go
    through ``black.format_str`` one by one, at the width their indentation leaves. Black
    lays out a statement by itself whatever surrounds it, so the module comes out as black
    would write it (tests/test_generate.py checks that black leaves every module as it is),
    and black never passes over the whole module; ``format_str`` passes twice over any
    text it changes, which for whole modules doubled the cost of generating.
    """
    try:
        tree = ast.parse(text, name)
    except SyntaxError as e:  # a template bug: say where
        raise RuntimeError(f"generated {name} is not valid Python: {e}") from e
    lines = text.splitlines(keepends=True)
    width = BLACK_MODE.line_length
    long = {i + 1 for i, line in enumerate(lines) if len(line.rstrip("\n")) > width}
    long -= _unformatted_lines(lines)
    if not long:
        return text
    out: list[str] = []
    done = 0  # lines[:done] are in out
    for first, last in _statements(tree.body):
        if done < first and long.intersection(range(first, last + 1)):
            out.extend(lines[done : first - 1])
            out.append(_format_statement(name, first, lines[first - 1 : last]))
            done = last
    out.extend(lines[done:])
    return "".join(out)


def _statements(body: list[ast.stmt]) -> Iterator[tuple[int, int]]:
    """(first, last) line of each simple statement and of each compound statement's
    header, in order; docstrings (black does not split strings) left out."""
    for node in body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        inner = [getattr(node, f, None) or [] for f in ("body", "handlers", "orelse", "finalbody")]
        if not any(inner):
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
                assert node.end_lineno is not None
                yield first, node.end_lineno
            continue
        yield first, inner[0][0].lineno - 1
        for part in inner:
            yield from _statements(part)


def _unformatted_lines(lines: list[str]) -> set[int]:
    """The line numbers between ``# fmt: off`` and ``# fmt: on``: data the template lays
    out itself, which black leaves alone."""
    out: set[int] = set()
    start = 0
    for i, line in enumerate(lines, 1):
        if line == "# fmt: off\n":
            start = i
        elif line == "# fmt: on\n" and start:
            out.update(range(start, i + 1))
            start = 0
    return out


@functools.cache
def _mode(indent: int) -> black.Mode:
    return dataclasses.replace(BLACK_MODE, line_length=BLACK_MODE.line_length - indent)


def _format_statement(name: str, line: int, statement: list[str]) -> str:
    """One statement (or a compound statement's header) as black lays it out in place."""
    indent = len(statement[0]) - len(statement[0].lstrip(" "))
    source = "".join(s[indent:] for s in statement)
    header = source.rstrip().endswith(":")
    if header:  # black wants a whole statement: give the header a body, then drop it
        source += "    pass\n"
    try:
        text = black.format_str(source, mode=_mode(indent))
    except black.parsing.InvalidInput as e:
        raise RuntimeError(f"generated {name} line {line}: black cannot format it: {e}") from e
    if header:
        text = text.removesuffix("    pass\n")
    pad = " " * indent
    return "".join(pad + s if s.strip() else s for s in text.splitlines(keepends=True))
