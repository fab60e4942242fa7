"""Exact solvers for small games (ground truth for evaluation)."""
