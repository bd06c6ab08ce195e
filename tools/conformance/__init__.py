"""The conformance suite: the same requests to two brokers, responses compared field by field.

``kafkagen conformance --bootstrap HOST:PORT [--reference HOST:PORT]`` runs it from the
command line; `run_suite` from code. Scenarios live in the ``*_scenarios`` modules and
``every_api``; `normalise` says what may legitimately differ.
"""

from .core import SCENARIOS, Result, Scenario, Session, SetupError, Target, scenario
from .suite import all_scenarios, exit_status, load_documented, run_suite, summary, table

__all__ = [
    "SCENARIOS",
    "Result",
    "Scenario",
    "Session",
    "SetupError",
    "Target",
    "all_scenarios",
    "exit_status",
    "load_documented",
    "run_suite",
    "scenario",
    "summary",
    "table",
]
