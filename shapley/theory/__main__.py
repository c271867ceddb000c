"""``python -m shapley.theory [--max-examples N] [--seed S] [--out DIR]``: the three properties for every
estimator, written to ``DIR/axiom_table.csv`` and ``DIR/axiom_settings.json`` (``make axioms``)."""

from shapley.theory.axioms import main

raise SystemExit(main())
