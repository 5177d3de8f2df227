"""The service's settings: :class:`kg.settings.Settings`, declared in the library
so that ``kg serve`` can derive its flags from it."""

from kg.settings import Settings, env_name, flagged

__all__ = ["Settings", "env_name", "flagged"]
