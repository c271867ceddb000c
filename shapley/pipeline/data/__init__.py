"""Data stage. In: a dataset name (local file under the data folder, or the hub online) or a file of sampled
answers; out: :class:`~shapley.pipeline.rundir.records.QARecord` question records with their few-shot prompts
(:mod:`.datasets`), read through the file checks of :mod:`.files`, and the ``score-samples`` input items
(:mod:`.samples`).
"""
