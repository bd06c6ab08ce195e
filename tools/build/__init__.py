"""Generation as a build step: a project's own specs become a package inside its wheel.

A project names its spec folders and the package folder in ``[tool.kafkagen]`` of its
``pyproject.toml`` (``config``); the build backend's plugin (``hatch_hook`` for hatchling,
``setuptools_command`` for setuptools) calls ``generation.ensure_generated`` before the
project's files are collected, which regenerates only when the inputs' digest changed.
"""
