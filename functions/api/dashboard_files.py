"""/dashboard: the web dashboard's static files, and /docs, the API reference (Swagger UI rendering
/v1/openapi.json), served by the API function itself.

The HTML, JS and CSS need no key (they hold no data); every data call the page makes sends
the key the user typed as a bearer token to the same /v1 (or /operator) routes anyone can
call. The files are read once per container: index.html and the icon from dashboard/, app.js and
app.css from dashboard/build/, which infra/bundling.py makes with esbuild when the code asset is
built (the front-end libraries come from node_modules, bundled in).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path as PathParam
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from shared.errors import NotFound

router = APIGatewayHttpRouter()

ASSETS = Path(__file__).resolve().parent / "dashboard"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


class Asset:
    def __init__(self, path: Path) -> None:
        self.body = path.read_text(encoding="utf-8")
        self.content_type = CONTENT_TYPES[path.suffix]
        self.etag = '"' + hashlib.sha256(self.body.encode()).hexdigest()[:32] + '"'


def _load() -> dict[str, Asset]:
    folders = [ASSETS, ASSETS / "build"]
    return {
        path.name: Asset(path)
        for folder in folders
        if folder.is_dir()
        for path in sorted(folder.iterdir())
        if path.suffix in CONTENT_TYPES and path.suffix != ".html"  # pages have routes of their own
    }


# Everything is a file of this origin: no inline script or style, no eval, no framing.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",  # revalidate (ETag): a new deploy shows at once
    "Vary": "Accept-Encoding",
}


@cache
def index() -> Asset:
    return Asset(ASSETS / "index.html")


@cache
def api_docs() -> Asset:
    return Asset(ASSETS / "docs.html")


@cache
def files() -> dict[str, Asset]:
    # Read on the first dashboard request, not at import: the API's cold start serves enqueues.
    return _load()


def _serve(asset: Asset) -> Response[str]:
    headers = {**SECURITY_HEADERS, "ETag": asset.etag}
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
    return Response(status_code=308, headers={**SECURITY_HEADERS, "Location": "../dashboard"}, body="")


@router.get("/dashboard/<name>", include_in_schema=False, compress=True)
def dashboard_file(name: Annotated[str, PathParam(max_length=64)]) -> Response[Any]:
    asset = files().get(name)
    if asset is None:
        raise NotFound(f"no dashboard file {name!r}")
    return _serve(asset)


@router.get("/docs", include_in_schema=False, compress=True)
def docs() -> Response[str]:
    """The API reference: Swagger UI, its files served from /dashboard/ under the dashboard's CSP."""
    return _serve(api_docs())
