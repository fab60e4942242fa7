"""The command lines of azjax, every one of them: what the `azjax` console script
(`azjax/__main__.py`), `python -m azjax.commands.<command>` and `python -m
azjax.<command>` (a few-line entry point at the top of the package) run, and what they
share. A command never imports another command: what two share lives in a lower layer
(`azjax.run.agents.agent_source`, say), or in the two helper modules below.

Modules:

* `errors`: one-line errors, exit statuses and the exit of a script (a helper).
* `command_line`: a training command line read once, over a recipe's preset or the run it
  resumes (a helper).
* `train`: `azjax train GAME` (and `python experiments/<game>.py`).
* `sweep`: `azjax sweep GAME`.
* `info`: `azjax info AGENT`, an agent's game, network, search and provenance.
* `arena`: `azjax arena A B`, games between two players, with confidence intervals.
* `league`: `azjax league`, a round robin over a run's checkpoints and baselines.
* `play`: `azjax play`, a trained agent in the terminal (`play_game`, `session`).
* `serve`: `azjax serve`, a trained agent in the browser.
* `export`: `azjax export RUN_DIR OUT`, a run's agent as one file.
* `gtp`: `azjax gtp`, a trained Go agent as a GTP engine.
* `gtp_referee`: `azjax gtp-referee`, games between two GTP engines, refereed.

May import: `envs`, `azjax.core`, `azjax.run`, `azjax.go`,
`azjax.evaluation`, `azjax.driver`, `azjax.sweep`.
"""

__all__: list[str] = []
