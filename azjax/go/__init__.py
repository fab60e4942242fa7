"""Go's own tools: GNU Go as an opponent, a trained agent as a GTP engine, a referee
between two GTP engines, and SGF game records.

Modules:

* `gtp_client`: a Go engine as a child process spoken to over GTP.
* `gnugo`: GNU Go as a host `Player`.
* `gnugo_kind`: the player spec `gnugo:LEVEL`, registered with `azjax.run.grammar.specs`.
* `sgf`: Go games as SGF files, readable by any Go program.
* `gtp_protocol`: the words of GTP that engines and referees share (colours, scores).
* `gtp_engine`: the GTP version 2 engine around a Go `Agent` (`python -m azjax.gtp`).
* `ownership`: the network's predicted ownership and score as GTP text.
* `referee`: games between two GTP engines, every move checked (`python -m azjax.gtp_referee`).

May import: `envs`, `azjax.core`, `azjax.run`.
"""

from azjax.go.gnugo import GnuGoPlayer, gnugo_player
from azjax.go.gtp_client import GtpError, GtpProcess
from azjax.go.gtp_engine import Engine, serve
from azjax.go.referee import referee
from azjax.go.sgf import go_game_sgf, write_sgf

__all__ = [
    "Engine",
    "GnuGoPlayer",
    "GtpError",
    "GtpProcess",
    "go_game_sgf",
    "gnugo_player",
    "referee",
    "serve",
    "write_sgf",
]
