"""AlphaZero on 7x7 Go (Tromp-Taylor area scoring, komi 9, positional superko), scored
against GNU Go.

    python experiments/go7x7.py [--game-options komi=K history=T] [--help]

By the 1989 analysis of 7x7 Go (docs/go.md), Black wins by 9 points with best play under
area scoring, so komi 9 makes it a draw. The recipe adds two of KataGo's levers for
learning from few games: an ownership head and a score head, trained on who owns each
point and the margin at the end of every self-play game. Every move gets 32 simulations
of Gumbel search; the third lever, playout cap randomisation (`--selfplay.full-search-prob
0.25`: a quarter of the moves searched in full, the rest with 8), is off on a CPU: it did
not help there (docs/go.md has the comparison).
Every 5 minutes network + search plays GNU Go level 1 (`gnugo:1`, 20 games, colours
alternating); its score and points margin go to metrics.jsonl, and every 100th
iteration's checkpoint is kept for the curve against both levels
(`benchmarks/go_curve.py`). The defaults fit a 2-core CPU: a 32x2 residual network, 128
games at once, 60 minutes of training. On a GPU (or with --preset gpu) its gpu variant:
1,024 games, a 64x4 network, playout cap randomisation on (it keeps a GPU busy), 10
minutes, a checkpoint every 2 minutes (the newest three kept).
Score the result against GNU Go at full strength with
`python -m azjax.arena alphazero:runs/go7x7 gnugo:10 --games 100`.
"""

from azjax.commands.train import script

if __name__ == "__main__":
    script("go7x7")  # the same as `azjax train go7x7`
