"""AlphaZero on 9x9 Go (Tromp-Taylor area scoring, komi 7.5, positional superko), scored
against random play and GNU Go level 1.

    python experiments/go9x9.py [--game-options komi=K history=T] [--help]

A curriculum over board sizes on a 2-core CPU, 20 minutes: the go7x7 recipe trains this
recipe's network for 14 minutes (RUN_DIR/warm-up; `--warm-up ''` for none), then 9x9 Go
goes on from its weights for 6. The first status line says so. `--max-minutes M` is the
whole command's time, shared 14:6 (`--max-minutes 10`: 7 + 3), unless
`--warm-up-minutes` is given too (then each option is its own part's); `--iterations N`
bounds each part. The network's
heads pool over the board (`--network.pooled-heads`), so one set of weights plays both
sizes; it has ownership and score heads, Gumbel search with 32 simulations on every
move, 4 positions of history (AlphaGo Zero used 8). The
trained agent plays with 128 simulations of PUCT that never fill its own eyes
(`--search.play-simulations`, `--search.play-policy`, `--search.play-skip-futile`): in
the arena, over GTP and in `python -m azjax.play`.
There is no exact solver for Go here, so every evaluation plays network + search against
GNU Go level 1 (`gnugo:1`, 16 games every 3 minutes: score and points margin) and the
network alone against a uniformly random player. On a GPU (or with --preset gpu) its
gpu variant: 1,024 games, a 64x4 network, playout cap randomisation on (32 simulations on
a quarter of the moves, 8 on the others), 3 minutes of go7x7's gpu variant, then 3 of 9x9
(what it reaches: docs/go.md#9x9-on-a-gpu).
"""

from azjax.commands.train import script

if __name__ == "__main__":
    script("go9x9")  # the same as `azjax train go9x9`
