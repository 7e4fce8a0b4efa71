"""Service settings (what the CLI builds from flags and environment)."""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Settings"]


class Settings(BaseModel):
    """How the service behaves around the executors it serves.

    ``api_keys`` maps each accepted key to the user id it acts as; when it is empty, requests
    are not authenticated and the user id comes from ``X-User-Id`` or the body.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    heartbeat_seconds: float = Field(default=15.0, gt=0)
    write_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="A stream whose client takes no data for this long is cut (slow reader).",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024,
        gt=0,
        description="The largest request body read; a larger one is answered 413 "
        "(payload_too_large) naming this limit.",
    )
    api_keys: dict[str, str] = Field(default_factory=dict)
    cors_origins: tuple[str, ...] = ()
    trusted_proxies: tuple[str, ...] = Field(
        default=(),
        description="Addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For is "
        "believed; without them the client address is the connection's peer.",
    )
    shutdown_grace_seconds: float = Field(default=10.0, ge=0)
    reattach_grace_seconds: float = Field(
        default=5.0,
        ge=0,
        description="A run whose client went away before done waits this long for it to come "
        "back (Last-Event-ID) before it is cancelled.",
    )
    replay_window_seconds: float = Field(
        default=300.0,
        ge=0,
        description="A finished run's events are kept this long for clients that re-attach.",
    )
    default_agent: str = "default"
    operator_users: tuple[str, ...] = Field(
        default=(),
        description="User ids whose API keys may read every user's spend (GET /api/usage).",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            ipaddress.ip_network(item, strict=False)  # raises ValueError for a bad entry
        return value
