"""The run directory: what every stage reads and writes. In: records and settings from the stages; out: files on
disk (:mod:`.store`: checksummed JSON lines via :mod:`.jsonl`, atomic writes, ``config.json`` with
:mod:`.provenance`; :mod:`.derived`: the freshness record of derived files), the record types passed between
stages (:mod:`.records`), the stored-config schemas (:mod:`.schemas`) and the project's paths
(:mod:`.settings`). Imports no stage.
"""
