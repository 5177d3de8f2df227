"""The ``kg`` command line: the layer on top of every stage."""
