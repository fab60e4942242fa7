"""The tiny test program (`tests/tiny.py`): its command-line flags give its config."""

from __future__ import annotations

import sys

from test_training import ROOT
from tiny import CONFIG, FLAGS

sys.path.insert(0, str(ROOT / "experiments"))

from _cli import Experiment, parse_with_preset  # noqa: E402


def test_the_flags_give_the_config_to_the_tictactoe_script():
    options, _ = parse_with_preset(Experiment, "tictactoe",
                                   lambda config: Experiment(config=config), FLAGS,
                                   start=lambda _: None)
    parsed = options.config
    assert parsed.program == CONFIG.program
    assert parsed.run == CONFIG.run
    assert parsed.seed == CONFIG.seed
    assert parsed.program.network.channels == 16  # the flags did change the recipe
