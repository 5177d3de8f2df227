"""Reading: corpus files and records in, :class:`~kg.model.Record` out."""
