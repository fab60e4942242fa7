"""The command lines of azjax: what the `azjax` console script (`azjax/__main__.py`) and
`python -m azjax.<command>` run, and what they share.

Modules:

* `errors`: one-line errors, exit statuses and the exit of a script.
* `command_line`: a training command line read once, over a recipe's preset or the run it
  resumes.
* `train`: `azjax train GAME` (and `python experiments/<game>.py`).
* `sweep`: `azjax sweep GAME`.
* `info`: `azjax info AGENT`, an agent's game, network, search and provenance.

May import: `envs`, `azjax.core`, `azjax.run`, `azjax.go`,
`azjax.evaluation`, `azjax.driver`, `azjax.sweep`.
"""

__all__: list[str] = []
