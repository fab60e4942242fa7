"""0.2.0 removed the old names that 0.1.0 kept working with a DeprecationWarning (or kept
quietly, `azjax.evaluate`): CHANGELOG.md's "Removed" lists each with what replaces it.
They stay gone: no module brings one back through a module `__getattr__` (PEP 562), and
each replacement is there."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Old module -> the module that replaces it.
MODULES = {"azjax.cli": "azjax.commands.errors", "envs.checker": "envs.conformance",
           "azjax.run.deprecation": None,  # the warning's machinery itself
           # azjax.run's modules regrouped into folders (no door at the old paths)
           "azjax.run.run_dir": "azjax.run.directory.run_dir",
           "azjax.run.checkpoint": "azjax.run.directory.checkpoint",
           "azjax.run.metrics_log": "azjax.run.directory.metrics_log",
           "azjax.run.lock": "azjax.run.directory.lock",
           "azjax.run.agent": "azjax.run.agents.agent",
           "azjax.run.devices": "azjax.run.process.devices",
           "azjax.run.specs": "azjax.run.grammar.specs",
           "azjax.run.web_games": "azjax.run.browser.web_games",
           "envs.conformance_rules": "envs.conformance.rules"}
# (module, old name) -> (module, the name that replaces it). (azjax.driver.warm_up's
# WARM_UP_DIR door is gone too; the module imports the layout's constant for its own use.)
NAMES = {
    ("azjax", "evaluate"): ("azjax", "play_match"),
    ("azjax.run.config", "SEED_MAX"): ("azjax.run.config", "RUN_SEED_MAX"),
    ("azjax.run.config", "MAX_SEED"): ("azjax.run.config", "COMMAND_SEED_MAX"),
    ("azjax.run.grammar.specs", "KINDS"): ("azjax.run.grammar.specs", "kinds"),
    ("azjax.driver.status", "LOSSES"): ("azjax.run.metric_schema", "LOSSES"),
    ("azjax.run.directory.plots", "LOSS_KEYS"): ("azjax.run.metric_schema", "LOSSES"),
    ("azjax.evaluation.evaluators", "OPPONENT_PREFIX"): ("azjax.run.metric_schema",
                                                         "versus_key"),
    ("azjax.evaluation.evaluators", "MARGIN_PREFIX"): ("azjax.run.metric_schema",
                                                       "margin_key"),
    ("azjax.evaluation.evaluators", "METRIC_LABELS"): ("azjax.run.metric_schema",
                                                       "EVALUATION_SHOWN"),
    # The run directory's module-level mirrors and the checkpoint module's facade: one
    # door per operation, the RunDir's (its members `checkpoints` and `metrics`).
    ("azjax.run", "load_config"): ("azjax.run.directory.run_dir.RunDir", "load_config"),
    ("azjax.run", "read_metrics"): ("azjax.run.directory.metrics_log.Metrics", "read"),
    ("azjax.run.directory.run_dir", "read_metrics"): ("azjax.run.directory.metrics_log.Metrics",
                                                      "read"),
    ("azjax.run.directory.run_dir", "save_config"): ("azjax.run.directory.run_dir.RunDir",
                                                     "save_config"),
    ("azjax.run.directory.checkpoint", "checkpoint_manager"): (
        "azjax.run.directory.checkpoint.Checkpoints", "open_for_saving"),
    ("azjax.run.directory.checkpoint", "restore_newest"): (
        "azjax.run.directory.checkpoint.Checkpoints", "restore_newest"),
    ("azjax.run.directory.checkpoint", "load_config"): ("azjax.run.directory.run_dir.RunDir",
                                                        "load_config"),
    ("azjax.run.directory.lock", "lock_run_dir"): ("azjax.run.directory.run_dir.RunDir",
                                                   "lock"),
}


def _resolve(dotted: str):
    """A module, or a class in one ('package.module.Class')."""
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)


def test_the_names_removed_in_0_2_0_are_gone_and_their_replacements_are_there():
    for old, new in MODULES.items():
        sys.modules.pop(old, None)
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
        assert new is None or importlib.import_module(new)
    for (module, name), (new_module, new_name) in NAMES.items():
        assert not hasattr(importlib.import_module(module), name), f"{module}.{name}"
        assert hasattr(_resolve(new_module), new_name), f"{new_module}.{new_name}"
    assert "evaluate" not in importlib.import_module("azjax").__all__
    doors = [f"{path.relative_to(ROOT)}:{node.lineno}"
             for package in ("azjax", "envs") for path in sorted((ROOT / package).rglob("*.py"))
             for node in ast.parse(path.read_text()).body
             if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
             or isinstance(node, ast.Assign)
             and any(getattr(t, "id", None) == "__getattr__" for t in node.targets)]
    assert doors == []
