"""Game-specific evaluators against exact ground truth (see `azjax.evaluation`)."""
