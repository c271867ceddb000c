"""Orchestration. In: a :class:`~shapley.pipeline.config.RunConfig`; out: a complete run directory. Both
pipelines (:mod:`.pipelines`: data -> generate -> entail -> score -> evaluate, and score-samples), the resumable
stage runner with lazily loaded models (:mod:`.stages`) and the merging of sharded runs (:mod:`.merge`). May
import every stage.
"""
