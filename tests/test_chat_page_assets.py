"""The chat page's files over HTTP: what ``GET /static/...`` serves, to whom, and what not.

The page's script, styles and vendored libraries are public like the page itself (a browser
loads them before anyone typed a key); only ``.js``/``.css`` files under ``server/static/`` are
served, looked up by name. The page runs no inline script or style, so its
Content-Security-Policy (``script-src 'self'``) holds.
"""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor, ScriptedModel
from server import Settings, create_app
from tests.server_helpers import serve

STATIC = Path(__file__).resolve().parent.parent / "server" / "static"
KEYED = Settings(api_keys={"sk-assets": "alice"})


class _PageParts(HTMLParser):
    """The files index.html loads, and whether it has inline script or style."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script":
            self._in_script = "src" not in found
            self.files += [found["src"] or ""] if "src" in found else []
        if tag == "link" and found.get("rel") == "stylesheet":
            self.files.append(found.get("href") or "")
        if tag == "style" or "style" in found or any(name.startswith("on") for name in found):
            self.inline.append(tag)

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append("script")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False


def page_parts() -> _PageParts:
    parts = _PageParts()
    parts.feed((STATIC / "index.html").read_text())
    return parts


def executor() -> AgentExecutor:
    return AgentExecutor(model=ScriptedModel(), metrics=CollectorRegistry())


async def test_the_page_and_every_file_it_loads_are_served_without_a_key() -> None:
    parts = page_parts()
    assert parts.files == [
        "static/chat.css",
        "static/vendor/marked.umd.js",
        "static/vendor/purify.min.js",
        "static/chat.js",
    ]
    assert parts.inline == []  # nothing the Content-Security-Policy would block
    async with serve(executor(), KEYED) as client:
        page = await client.get("/")
        assert page.status_code == 200
        assert "script-src 'self'" in page.text
        for name in parts.files:
            response = await client.get(f"/{name}")
            assert response.status_code == 200, name
            kind = "text/css" if name.endswith(".css") else "text/javascript"
            assert response.headers["Content-Type"] == f"{kind}; charset=utf-8"
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            assert response.headers["Cache-Control"] == "no-cache"
            assert response.content == (STATIC / name.removeprefix("static/")).read_bytes()
        # the API itself still needs the key
        assert (await client.post("/api/chat", json={"message": "hi"})).status_code == 401


@pytest.mark.parametrize(
    "path",
    [
        "/static/index.html",  # the page is served at /, not here
        "/static/vendor/README.md",
        "/static/vendor/marked.LICENSE.md",
        "/static/missing.js",
        "/static/..%2Fstate.py",
        "/static/%2e%2e/routes.py",
        "/static//etc/passwd",
        "/static/vendor/../../app.py",
    ],
)
async def test_nothing_else_is_served(path: str) -> None:
    async with serve(executor(), KEYED) as client:
        response = await client.get(path)
        assert response.status_code == 404, response.text


def test_the_vendored_files_are_the_ones_the_readme_names() -> None:
    readme = (STATIC / "vendor" / "README.md").read_text()
    hashes = {name: digest for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.M)}
    assert sorted(hashes) == ["marked.umd.js", "purify.min.js"]
    for name, digest in hashes.items():
        assert hashlib.sha256((STATIC / "vendor" / name).read_bytes()).hexdigest() == digest
    for name, version in [("marked.umd.js", "18.2.1"), ("purify.min.js", "3.4.18")]:
        assert version in (STATIC / "vendor" / name).read_text()[:300]
        assert f"| {version} |" in readme
    for licence in ["marked.LICENSE.md", "dompurify.LICENSE", "dompurify.LICENSE-MPL"]:
        assert (STATIC / "vendor" / licence).stat().st_size > 1000


async def test_the_files_are_served_under_a_prefix_too() -> None:
    """Mounted as a sub-application, the page's relative ``static/...`` paths still resolve."""
    app = web.Application()
    app.add_subapp("/agent/", create_app(executor(), KEYED))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with httpx.AsyncClient(base_url=str(server.make_url("")), timeout=10) as client:
            statuses = [
                (await client.get(f"/agent/{name}")).status_code for name in page_parts().files
            ]
    finally:
        await server.close()
    assert statuses == [200, 200, 200, 200]
