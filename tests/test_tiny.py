"""The tiny test program (`tests/tiny.py`): its command-line flags give its config."""

from __future__ import annotations

from tiny import CONFIG, FLAGS

from azjax.commands.command_line import parse_with_preset, read_command_line
from azjax.commands.train import Experiment


def test_the_flags_give_the_config_to_the_tictactoe_script():
    options, _ = parse_with_preset(Experiment, read_command_line(["tictactoe", *FLAGS]),
                                   lambda config: Experiment(config=config),
                                   start=lambda _: None)
    parsed = options.config
    assert parsed.program == CONFIG.program
    assert parsed.run == CONFIG.run
    assert parsed.seed == CONFIG.seed
    assert parsed.program.network.channels == 16  # the flags did change the recipe
