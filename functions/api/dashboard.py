"""/dashboard: the web dashboard's static files, served by the API function itself.

The HTML, JS and CSS need no key (they hold no data); every data call the page makes sends
the key the user typed as a bearer token to the same /v1 (or /operator) routes anyone can
call. The files are read once per container; the front-end libraries are copied from
node_modules into dashboard/vendor/ when the code asset is built (infra/bundling.py).
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path as PathParam
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.responses import error_response

router = APIGatewayHttpRouter()

ASSETS = Path(__file__).resolve().parent / "dashboard"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_IMPORT_MAP = re.compile(r'<script type="importmap">(.*?)</script>', re.DOTALL)


class Asset:
    def __init__(self, path: Path) -> None:
        self.body = path.read_text(encoding="utf-8")
        self.content_type = CONTENT_TYPES[path.suffix]
        self.etag = '"' + hashlib.sha256(self.body.encode()).hexdigest()[:32] + '"'


def _load() -> dict[str, Asset]:
    folders = [ASSETS, ASSETS / "vendor"]
    return {
        path.name: Asset(path)
        for folder in folders
        if folder.is_dir()
        for path in sorted(folder.iterdir())
        if path.suffix in CONTENT_TYPES and path.name != "index.html"
    }


def _content_security_policy(index_html: str) -> str:
    # The page's only inline script is its import map (the browser resolves "preact" with it);
    # it is allowed by its hash, so no 'unsafe-inline' and no 'unsafe-eval' anywhere.
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(block.encode()).digest()).decode() + "'"
        for block in _IMPORT_MAP.findall(index_html)
    )
    return (
        f"default-src 'self'; script-src 'self' {hashes}; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


@cache
def index() -> Asset:
    return Asset(ASSETS / "index.html")


@cache
def files() -> dict[str, Asset]:
    # Read on the first dashboard request, not at import: the API's cold start serves enqueues.
    return _load()


@cache
def security_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": _content_security_policy(index().body),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cache-Control": "no-cache",  # revalidate (ETag): a new deploy shows at once
        "Vary": "Accept-Encoding",
    }


def _serve(asset: Asset) -> Response[str]:
    headers = {**security_headers(), "ETag": asset.etag}
    if router.current_event.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers, body="")
    return Response(status_code=200, content_type=asset.content_type, body=asset.body, headers=headers)


@router.get("/dashboard", include_in_schema=False, compress=True)
def dashboard() -> Response[str]:
    return _serve(index())


@router.get("/dashboard/", include_in_schema=False)
def dashboard_slash() -> Response[str]:
    # Relative links in the page resolve against /dashboard (no slash); "../dashboard" keeps any
    # path prefix in front of it (a custom domain's base path, the emulator's /_aws/execute-api/<id>).
    return Response(status_code=308, headers={**security_headers(), "Location": "../dashboard"}, body="")


@router.get("/dashboard/<name>", include_in_schema=False, compress=True)
def dashboard_file(name: Annotated[str, PathParam(max_length=64)]) -> Response[Any]:
    asset = files().get(name)
    if asset is None:
        return error_response(404, "not_found", f"no dashboard file {name!r}")
    return _serve(asset)
