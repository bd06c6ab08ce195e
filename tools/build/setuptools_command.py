"""The setuptools side: a ``build_kafkagen`` step that runs first in ``build``.

setuptools calls ``finalize`` (the ``setuptools.finalize_distribution_options`` entry
point) for every distribution it builds while kafkagen is installed; it adds the step only
to a project whose ``pyproject.toml`` has a ``[tool.kafkagen]`` table, so a project opts in
by listing ``kafkagen`` in ``build-system.requires`` and writing that table. The step is a
build sub-command in the sense of ``setuptools.command.build.SubCommand``, so wheels, sdists
and editable installs all run it: it generates the package in place (inside the project)
and adds it to the distribution's packages, where ``build_py`` picks it up; the spec files
are its sources, which puts them in the sdist.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from setuptools import Command  # type: ignore[import-untyped, unused-ignore]
from setuptools.errors import SetupError  # type: ignore[import-untyped, unused-ignore]

from .config import PYPROJECT, TABLE, BuildError, Settings, load_settings, read_table

COMMAND = "build_kafkagen"


def finalize(dist: Any) -> None:
    """Put ``build_kafkagen`` first among ``build``'s steps, for a project that asks."""
    root = Path(getattr(dist, "src_root", None) or os.curdir)
    try:
        wanted = read_table(root) is not None
    except BuildError:
        wanted = True  # the step reports the broken pyproject.toml when it runs
    if not wanted:
        return
    build = dist.get_command_class("build")
    if COMMAND not in [name for name, _ in build.sub_commands]:
        steps = [(COMMAND, None), *build.sub_commands]
        dist.cmdclass["build"] = type("build", (build,), {"sub_commands": steps})
    dist.cmdclass[COMMAND] = BuildKafkagen


class BuildKafkagen(Command):  # type: ignore[misc]
    description = f"generate the package {TABLE} in {PYPROJECT} names"
    user_options: list[tuple[str, str | None, str]] = []
    editable_mode = False

    def initialize_options(self) -> None:
        self.root = Path(os.curdir)

    def finalize_options(self) -> None:
        self.root = Path(getattr(self.distribution, "src_root", None) or os.curdir)

    def _settings(self) -> Settings:
        try:
            return load_settings(self.root)
        except BuildError as e:
            raise SetupError(str(e)) from None

    def run(self) -> None:
        from .generation import ensure_generated

        settings = self._settings()
        try:
            self.announce(ensure_generated(settings), level=logging.INFO)
        except BuildError as e:
            raise SetupError(str(e)) from None
        self._add_package(settings)

    def _add_package(self, settings: Settings) -> None:
        """Make ``build_py`` (and the editable install) see the generated package, which
        package discovery, run before it existed, may have missed."""
        dist = self.distribution
        name = package_name(settings, dist.package_dir or {})
        if dist.packages is None:
            dist.packages = []
        if name not in dist.packages:
            dist.packages.append(name)
        data = dist.package_data.setdefault(name, [])
        if "py.typed" not in data:
            data.append("py.typed")

    def get_source_files(self) -> list[str]:
        from kafkagen.generator.loader import spec_files

        settings = self._settings()
        return [
            os.path.relpath(path, self.root)
            for folder in settings.specs
            for path in spec_files(folder)
        ]

    def get_outputs(self) -> list[str]:
        return []  # build_py copies the generated modules and reports them

    def get_output_mapping(self) -> dict[str, str]:
        return {}


def package_name(settings: Settings, package_dir: dict[str, str]) -> str:
    """The dotted name of ``settings.out`` under setuptools' ``package-dir`` mapping."""
    roots = dict(package_dir)
    roots.setdefault("", os.curdir)
    best: tuple[int, str] | None = None
    for package, folder in roots.items():
        base = (settings.root / folder).resolve()
        if base in settings.out.parents:
            parts = [package, *settings.out.relative_to(base).parts]
            candidate = (len(base.parts), ".".join(p for p in parts if p))
            best = max(best or candidate, candidate)
    if best is None:
        raise SetupError(
            f"{PYPROJECT}: {TABLE} out: {settings.shown(settings.out)!r} is outside every "
            "folder [tool.setuptools] package-dir maps to packages"
        )
    return best[1]
