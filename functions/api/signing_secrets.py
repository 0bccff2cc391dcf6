"""/v1/signing-secrets routes: the secrets HTTP jobs are signed with, their rotation, and expiring one at once.

Not rate limited, like the other write routes besides enqueue: each is one read and one conditional
write of the tenant's own item, and a tenant whose enqueue bucket is empty must still be able to
expire a leaked secret."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel, ConfigDict, Field

from functions.api.answers import SigningSecretsOut
from functions.api.caller import Tenant
from functions.api.models import idempotency_key_field
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared import settings
from shared.targets import signing_secrets
from shared.targets.http_policy import TargetPolicy
from shared.tenants import rate_limit

router = APIGatewayHttpRouter()


def _view(secrets: list[signing_secrets.SigningSecret]) -> dict[str, Any]:
    return {"secrets": [signing_secrets.public(secret) for secret in secrets]}


@router.get(
    "/v1/signing-secrets",
    tags=["signing secrets"],
    summary="The secrets HTTP jobs are signed with",
    description="Newest first; a secret with expires_at was rotated out and stays valid until then; one with a "
    "destination signs requests to that origin only; signs_from is when every request of its set began to carry "
    "its signature. The first call creates the tenant's first secret.",
    responses=documented({200: answer(SigningSecretsOut, "The valid secrets, newest first")}),
)
def get_signing_secrets(tenant: Tenant) -> Response[dict[str, Any]]:
    return json_response(200, _view(signing_secrets.active(tenant)))


class RotateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    destination: str | None = Field(
        default=None,
        max_length=300,
        description="An origin (https://host[:port]): the new secret signs requests to it alone, and only "
        "this destination's secrets sign them. Without it, the unbound secrets every other request is signed with, "
        "third parties' included: a receiver that verifies webhook-signature (which binds no URL) should hold its "
        "own destination's secret.",
    )
    idempotency_key: str | None = idempotency_key_field(
        "A rotation retried with its key adds no second secret: the same request answers the secrets "
        "as they stand; another request with the key answers 409 naming idempotency_key"
    )


@router.post(
    "/v1/signing-secrets:rotate",
    tags=["signing secrets"],
    summary="Add a new signing secret (for one destination, or unbound)",
    description=f"The previous secrets of the same set stay valid for {settings.SIGNING_SECRET_GRACE_SECONDS // 3600}"
    " hours; requests carry one signature per valid secret of their set. The new secret is on every request of "
    "its set from its signs_from: at once (its created_at), as workers signed with it already, unless the set was "
    f"rotated less than {settings.SIGNING_SECRET_KNOWN_AFTER_SECONDS} s before, or it is a destination's first "
    "secret: then from when every worker knows it. Until a destination's first secret's signs_from, its requests "
    "carry either the unbound signatures or its own (by the worker), and from then its own only: its receiver "
    "should accept both meanwhile.",
    responses=documented(
        {
            201: answer(SigningSecretsOut, "Rotated: the secrets, the new one first"),
            409: {
                "description": "conflict: the idempotency_key was used for another rotation (field: idempotency_key)"
            },
        },
        400,
        413,
        429,
    ),
)
def rotate_signing_secrets(
    tenant: Tenant, request: Annotated[RotateIn | None, Body()] = None
) -> Response[dict[str, Any]]:
    destination = request.destination if request is not None else None
    policy = TargetPolicy.from_env(tenant)
    origin = None if destination is None else signing_secrets.destination_origin(destination, policy)
    rate_limit.check(tenant)  # a rotation counts one against the tenant's rate limit (429 over it)
    key = request.idempotency_key if request is not None else None
    return json_response(201, _view(signing_secrets.rotate(tenant, destination=origin, idempotency_key=key)))


@router.post(
    "/v1/signing-secrets/<secret_id>/expire",
    tags=["signing secrets"],
    summary="Expire a signing secret now (a leaked one)",
    description="The secret is removed at once: the API no longer lists it and no new signature uses it "
    f"(workers that read it earlier stop within {settings.SIGNING_SECRETS_CACHE_SECONDS} s); receivers should "
    "stop accepting it. The tenant's only valid secret cannot be expired: rotate first, then expire the old one.",
    responses=documented(
        {
            200: answer(SigningSecretsOut, "Expired: the secrets left, newest first"),
            404: {"description": "not_found: no valid signing secret with this id for this API key's tenant"},
            409: {"description": "conflict: it is the only valid secret; rotate first"},
        }
    ),
)
def expire_signing_secret(tenant: Tenant, secret_id: Annotated[str, Path(max_length=64)]) -> Response[dict[str, Any]]:
    return json_response(200, _view(signing_secrets.expire(tenant, secret_id)))
