"""Shapley uncertainty inside other uncertainty harnesses: LM-Polygraph and uqlm.

* :mod:`shapley.integrations.lm_polygraph` (extra ``lm-polygraph``, environment ``.venv-lm-polygraph``): an
  LM-Polygraph estimator on the entailment matrices of the judge it names (LM-Polygraph's ``semantic_matrix_entail``
  or our calculator's ``shapley_semantic_matrix_entail``), ``load_estimator`` for its ``FactoryEstimator``, and a
  stat calculator that fills ``shapley_semantic_matrix_entail`` from our entailment backends.
* :mod:`shapley.integrations.uqlm` (extra ``uqlm``, environment ``.venv-uqlm``: uqlm needs numpy<2): a black-box
  scorer with uqlm's ``evaluate(responses, sampled_responses, progress_bar=None)`` returning confidences in [0, 1]
  (identical answers: ``beta``, 0.5 by default, not 1).

Both modules import without their peer installed (so that the package's doctests and layer checks run in the
main environment): LM-Polygraph's classes then raise ``ImportError`` naming the environment to install; the uqlm
scorer needs no uqlm (it only follows uqlm's interface). The maths both share (the total with a defined value for
singular kernels, the map to a confidence) is in :mod:`shapley.integrations.common`.

Layer rule: this layer may import :mod:`shapley.core` and :mod:`shapley.pipeline`; nothing in the package imports
it (``tests/test_architecture.py``). The pipeline's entailment backends
(:func:`shapley.pipeline.entail.backends.load_backend`, whose ``score`` gives each question's (n, n) matrix
``P(s_i => s_j)``) are imported where one is built, not at module level, so that the integrations import without
torch.
"""
