"""The OpenAPI description, completed with what the server really answers: every
error as ``application/problem+json`` (one ``Problem`` schema), and the 400 and
503 any operation can give (404 too where the path names a resource)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from service.errors import PROBLEM_MEDIA_TYPE

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details; extension members (limit, setting, "
    "parameter, errors…) depend on the problem type.",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string", "format": "uri"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
    },
    "additionalProperties": True,
}

_ALWAYS = {
    "400": "Bad request (a malformed request, or input past a safety limit)",
    "503": "Unavailable: the store is not open, or admission control refused "
    "the request (with Retry-After)",
}


def complete(schema: dict[str, Any]) -> dict[str, Any]:
    """Add the Problem schema and the error responses to every operation of ``schema``."""
    schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
    problem = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path, operations in schema.get("paths", {}).items():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for code, description in _ALWAYS.items():
                responses.setdefault(code, {"description": description})
            if "{" in path:
                responses.setdefault("404", {"description": "No such resource"})
            for code, response in responses.items():
                if code[0] in "45":
                    response["content"] = problem
    return schema


def openapi_builder(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """A replacement for ``app.openapi`` that returns the completed description."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    return build
