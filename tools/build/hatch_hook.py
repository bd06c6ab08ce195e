"""The hatchling build hook ``kafkagen``: generate the package, then let hatchling pack it.

Enabled by ``[tool.hatch.build.hooks.kafkagen]`` (an empty table) in a project that lists
``kafkagen`` in ``build-system.requires``; the settings live in ``[tool.kafkagen]``. The
package is generated inside the project, where the project's own code imports it, so:

- wheel and sdist: the generated folder is added as an artifact (it is usually ignored by
  git, which hatchling would otherwise follow); its stamp and marker go into the sdist
  only, so a wheel built from that sdist finds the package current and does not generate
  again;
- editable install: the project's folder is on the path already, so the package is only
  (re)generated in place; ``pip install -e .`` again picks up changed specs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl

from .config import PYPROJECT, BuildError

#: The options hatchling itself gives every build hook; kafkagen's own are in [tool.kafkagen].
_HATCH_OPTIONS = {
    "dependencies",
    "require-runtime-dependencies",
    "require-runtime-features",
    "enable-by-default",
}


class KafkagenBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "kafkagen"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        from kafkagen.generator.output import MARKER, STAMP

        from .config import load_settings
        from .generation import ensure_generated

        try:
            self._check_hook_table()
            settings = load_settings(Path(self.root))
            self.app.display_info(ensure_generated(settings))
        except BuildError as e:
            raise SystemExit(str(e)) from None
        if version == "editable":
            return
        package = settings.shown(settings.out)
        build_data["artifacts"].append(f"/{package}/")
        if self.target_name == "wheel":  # the package alone; the sdist keeps the stamp
            build_data["artifacts"] += [f"!/{package}/{STAMP}", f"!/{package}/{MARKER}"]

    def _check_hook_table(self) -> None:
        unknown = sorted(set(self.config) - _HATCH_OPTIONS)
        if unknown:
            raise BuildError(
                f"{PYPROJECT}: [tool.hatch.build.hooks.kafkagen] has no key {unknown[0]!r}: "
                "kafkagen's settings go in [tool.kafkagen]"
            )


@hookimpl
def hatch_register_build_hook() -> type[BuildHookInterface]:  # type: ignore[type-arg]
    return KafkagenBuildHook
