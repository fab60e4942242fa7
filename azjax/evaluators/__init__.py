"""Per-game ground truth for `azjax.evaluation.PositionEvaluator`: positions with known
right moves (and values) for tic-tac-toe, Connect Four and the coin-splitting game."""
