"""The run directory: what every stage reads and writes. In: records and settings from the stages; out: files on
disk (:mod:`.store`: checksummed JSON lines via :mod:`.jsonl`, atomic writes, ``config.json`` with
:mod:`.provenance`; :mod:`.derived`: the freshness record of derived files), the record types passed between
stages (:mod:`.records`) and the project's paths (:mod:`.settings`). Imports no stage; the run's configuration
(:mod:`shapley.pipeline.config`) is what ``config.json`` stores.
"""
