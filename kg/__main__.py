"""``python -m kg``: the ``kg`` command line."""

from kg.cli import main

main()
