"""What a command line spells: player specs (`random`, `mcts:100`, `alphazero:DIR`,
...) and the registry of their kinds (`specs`), and `--game-options KEY=VALUE ...`
(`game_options`).
"""
