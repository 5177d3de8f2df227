"""``python -m kg``: the ``kg`` command line."""

from kg.cli.main import main

main()
