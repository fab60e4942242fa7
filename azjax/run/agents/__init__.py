"""Agents: the `Agent` (network + search) of a run directory or of a one-file agent
(`agent`, `agent_file`); where it came from, as a file records it (`provenance`) and as a
run directory tells it (`run_provenance`); the trained agents that ship with azjax
(`shipped_agents`); the agent a command line names (`agent_source`); a run started from
another run's network weights (`warm_start`).
"""
