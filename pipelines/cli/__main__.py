"""``python -m pipelines.cli``: the same as the ``receipts`` console script."""

from pipelines.cli import main

main()
