"""A training run's directory: `RunDir` (`run_dir`), which composes its parts, each a
module: the names of its files (`layout`, with `RunDirError`), its checkpoints
(`checkpoint`: `Checkpoints`; `checkpoint_files`: step folders and manifests), its
metrics (`metrics_log`: `Metrics`, `MetricsLog`), its one writer's lock (`lock`), its
learning curves (`plots`) and what
each training process records of itself in `provenance.jsonl` (`process_record`).

Import order: `layout` < `checkpoint_files` < `checkpoint`, `lock`, `metrics_log` <
`run_dir`.
"""
