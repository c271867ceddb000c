"""Generate stage. In: question records and a :class:`~shapley.pipeline.generate.config.GenerationConfig`;
out: :class:`~shapley.pipeline.rundir.records.Generation` records (sampled answers, their log-likelihoods, the
greedy answer, self-evaluation probabilities, hidden states). :class:`~.generator.Generator` holds a prompt
builder (:mod:`.prompts`) and a decoder (:mod:`.decode`) and self-evaluates the answers; :mod:`.models` resolves,
loads and fingerprints models (also used by the entail stage).
"""
