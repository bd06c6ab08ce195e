"""Writes the command-line reference from the parsers themselves, so it cannot drift.

The page ``reference/cli.md`` holds the marker ``<!-- kafkagen: cli-reference -->``; at
build time it is replaced by the ``--help`` of every subcommand, each run through
``kafkagen.cli.main`` exactly as the shell would run it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os

from mkdocs.exceptions import PluginError

MARKER = "<!-- kafkagen: cli-reference -->"
#: argparse wraps to the terminal's width: fix it, so the page is the same everywhere.
WIDTH = "80"


def command_paths() -> list[list[str]]:
    """Every command line, as the words after ``kafkagen``: the command itself, each
    subcommand, and under ``control`` and ``bench`` each action and each benchmark."""
    from kafkagen import cli
    from kafkagen.cli import control

    nested = {"bench": list(cli.BENCHMARKS)}
    # argparse has no public way to list a parser's subcommands; its actions hold them.
    for action in control._parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            nested["control"] = list(action.choices)
    paths: list[list[str]] = [[]]
    for command in cli.COMMANDS:
        paths.append([command.name])
        paths += [[command.name, name] for name in nested.get(command.name, [])]
    return paths


def help_text(path: list[str]) -> str:
    from kafkagen import cli

    out = io.StringIO()
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        with contextlib.redirect_stdout(out):
            try:
                status = cli.main([*path, "--help"])
            except SystemExit as stop:
                status = stop.code
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    if status not in (0, None) or not out.getvalue().strip():
        raise PluginError(f"cli_reference: kafkagen {' '.join(path)} --help failed ({status})")
    return out.getvalue().rstrip()


def reference() -> str:
    sections = []
    for path in command_paths():
        level = "#" * (2 + max(len(path) - 1, 0))
        name = " ".join(["kafkagen", *path])
        sections.append(f"{level} `{name}`\n\n```text\n{help_text(path)}\n```\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
