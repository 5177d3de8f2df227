"""Evaluation and training: scoring the extractor and training its models."""
