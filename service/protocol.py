"""uvicorn's HTTP protocols with their own 400 (a request that does not parse as
HTTP, answered before the app sees it) as problem details, like every other error.

``kg serve`` passes :data:`PROTOCOL` to uvicorn. The classes are module
level so that uvicorn can hand them to its worker processes."""

from __future__ import annotations

import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.errors import PROBLEM_MEDIA_TYPE, problem_body

try:
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
except ImportError:  # httptools is optional
    HttpToolsProtocol = None  # type: ignore[assignment,misc]


def _problem_bytes(msg: str) -> bytes:
    body = problem_body(400, f"the request is not valid HTTP: {msg}", slug="malformed-request")
    return json.dumps(body).encode("utf-8")


class ProblemH11Protocol(H11Protocol):
    """h11-based protocol whose malformed-request 400 is problem+json."""

    def send_400_response(self, msg: str) -> None:
        body = _problem_bytes(msg)
        headers = [
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()


if HttpToolsProtocol is not None:

    class ProblemHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[misc,valid-type]
        """httptools-based protocol whose malformed-request 400 is problem+json."""

        def send_400_response(self, msg: str) -> None:
            body = _problem_bytes(msg)
            head = [STATUS_LINE[400]]
            for name, value in self.server_state.default_headers:
                head.extend([name, b": ", value, b"\r\n"])
            head += [
                b"content-type: " + PROBLEM_MEDIA_TYPE.encode() + b"\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n\r\n",
                body,
            ]
            self.transport.write(b"".join(head))
            self.transport.close()


def protocol_class() -> Any:
    """The protocol class for ``uvicorn.run(http=…)``: httptools when installed, else h11."""
    if HttpToolsProtocol is not None:
        return ProblemHttpToolsProtocol
    return ProblemH11Protocol


PROTOCOL = protocol_class()
"""What ``kg serve`` passes to uvicorn (by the name ``service.protocol:PROTOCOL``)."""
