"""The experiment pipeline: data -> generate -> entail -> score -> evaluate, driven by one
:class:`~shapley.pipeline.config.RunConfig`.

:mod:`.config` (the run configuration), :mod:`.records`, :mod:`.settings` (paths), :mod:`.models` (resolve,
load and fingerprint models), :mod:`.data`, :mod:`.generate`, :mod:`.entail`, :mod:`.correctness`,
:mod:`.score`, :mod:`.store` (checksummed JSON lines, atomic writes, run directories, provenance),
:mod:`.samples` (the ``score-samples`` input), :mod:`.experiment` (the stage runners and both pipelines) and
:mod:`.evaluate` (metrics per run and across runs). Imports only :mod:`shapley.core`.
"""
