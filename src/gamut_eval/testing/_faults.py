"""Fault rules: which requests get a broken reply, and what that reply is.

Every judge-output fault of docs/reliability.md section B is one ``FaultKind``. A rule matches
a request by arrival index, by a substring of the last user message, and/or by "the first
K times this body hash is seen" (so a client's retry of the same request can succeed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, get_args

import pydantic

from gamut_eval.errors import ErrorDetail, ValidationError, json_path
from gamut_eval.testing._requests import RequestContext

FaultKind = Literal[
    "truncated_json",
    "unknown_verdict",
    "prose",
    "empty",
    "refusal",
    "fence_echo",
    "http_429",
    "http_500",
    "http_503",
    "http_529",
    "http_400",
    "content_policy",
    "http_401",
    "timeout",
    "reset_mid_body",
]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)

# Faults that are a well-formed HTTP 200 completion whose content the judge client must
# reject: the assistant message content for each.
CONTENT_FAULTS: dict[FaultKind, str] = {
    "truncated_json": '{"verdict": "mee',
    "unknown_verdict": '{"verdict":"mostly meets"}',
    "prose": "The answer looks good to me.",
    "empty": "",
    "refusal": "I'm sorry, I can't help with that.",
}


@dataclass(frozen=True, slots=True)
class HttpFault:
    """An OpenAI-style error reply: status code and the ``error`` object's fields."""

    status: int
    type: str
    code: str | None
    message: str


HTTP_FAULTS: dict[FaultKind, HttpFault] = {
    "http_429": HttpFault(429, "requests", "rate_limit_exceeded", "Rate limit reached (fake)."),
    "http_500": HttpFault(500, "server_error", None, "The server had an error (fake)."),
    "http_503": HttpFault(503, "server_error", "service_unavailable", "Overloaded (fake)."),
    "http_529": HttpFault(529, "overloaded_error", None, "Overloaded (fake)."),
    "http_400": HttpFault(400, "invalid_request_error", None, "Invalid request (fake)."),
    "content_policy": HttpFault(
        400,
        "invalid_request_error",
        "content_policy_violation",
        "Your request was rejected as a result of our safety system (fake).",
    ),
    "http_401": HttpFault(401, "invalid_request_error", "invalid_api_key", "Incorrect API key."),
}


@dataclass(frozen=True)
class FaultRule:
    """Apply ``action`` to the requests that match every matcher given (AND).

    A rule with no matcher matches every request. The first matching rule in the server's
    list wins. Arrival indexes and seen counts restart when the request log is reset.
    """

    __pydantic_config__: ClassVar[pydantic.ConfigDict] = pydantic.ConfigDict(
        extra="forbid", strict=True
    )

    action: FaultKind
    """What the matching requests get."""
    first_n: int | None = None
    """Match requests whose 0-based arrival index is below this (the first N requests)."""
    after_n: int | None = None
    """Match requests whose 0-based arrival index is this or above (all but the first N:
    a server that stops working mid-run)."""
    indexes: tuple[int, ...] = ()
    """Match only these 0-based arrival indexes (empty: any index)."""
    contains: str | None = None
    """Match requests whose last user message contains this substring."""
    first_k_per_body: int | None = None
    """Match the first K arrivals of each distinct body hash; the (K+1)th retry succeeds."""
    retry_after_s: float = 1.0
    """``http_429`` only: value of the ``Retry-After`` header, in seconds."""
    timeout_s: float = 30.0
    """``timeout`` only: how long to stall before replying normally."""

    def __post_init__(self) -> None:
        if self.action not in FAULT_KINDS:
            raise ValueError(f"action must be one of {', '.join(FAULT_KINDS)}; got {self.action!r}")
        if self.first_n is not None and self.first_n < 0:
            raise ValueError(f"first_n must be >= 0; got {self.first_n}")
        if self.after_n is not None and self.after_n < 0:
            raise ValueError(f"after_n must be >= 0; got {self.after_n}")
        if any(i < 0 for i in self.indexes):
            raise ValueError(f"indexes must all be >= 0; got {self.indexes}")
        if self.first_k_per_body is not None and self.first_k_per_body < 1:
            raise ValueError(f"first_k_per_body must be >= 1; got {self.first_k_per_body}")
        if self.retry_after_s < 0 or self.timeout_s <= 0:
            raise ValueError("retry_after_s must be >= 0 and timeout_s > 0")

    def matches(self, ctx: RequestContext) -> bool:
        """Whether this rule applies to the request described by ``ctx``."""
        return (
            (self.first_n is None or ctx.index < self.first_n)
            and (self.after_n is None or ctx.index >= self.after_n)
            and (not self.indexes or ctx.index in self.indexes)
            and (self.contains is None or self.contains in ctx.last_user_message)
            and (self.first_k_per_body is None or ctx.seen_count <= self.first_k_per_body)
        )


_RULES_ADAPTER = pydantic.TypeAdapter(list[FaultRule])


def parse_fault_rules(text: str | bytes, *, source: str | None = None) -> list[FaultRule]:
    """Fault rules from a JSON list of objects with :class:`FaultRule`'s field names.

    Raises :class:`gamut_eval.errors.ValidationError` naming ``source``, the path and value.
    """
    try:
        return _RULES_ADAPTER.validate_json(text)
    except pydantic.ValidationError as error:
        details = [
            ErrorDetail(json_path(e["loc"]), e["type"], e["msg"], e.get("input"), source)
            for e in error.errors()
        ]
        raise ValidationError(details) from None


def load_fault_rules(path: str | Path) -> list[FaultRule]:
    """Fault rules from a JSON file (see :func:`parse_fault_rules`)."""
    return parse_fault_rules(Path(path).read_bytes(), source=str(path))


def serialise_fault_rules(rules: Iterable[FaultRule]) -> str:
    """The JSON text that :func:`parse_fault_rules` reads back to equal rules."""
    return json.dumps(_RULES_ADAPTER.dump_python(list(rules), mode="json"))
