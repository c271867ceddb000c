"""The results layer (:mod:`.records`): every file that the book or a run reads back is written with a record of
what determined it, and read back with the reasons it is stale. It imports nothing of the package, and every
other layer may import it.
"""
