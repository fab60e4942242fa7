"""The process's runtime: host devices on a CPU, `jax.distributed` and the data mesh
(`devices`); a run of several processes that loses one stops in one line (`peers`,
`guard`); SIGTERM and Ctrl-C stop a run after its iteration (`stop_signals`); the
persistent XLA compilation cache (`compile_cache`); status lines with rate and ETA
(`progress`).
"""
