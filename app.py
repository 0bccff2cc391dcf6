#!/usr/bin/env python3
"""CDK entry point: `npx cdk deploy` (AWS) or `make up` (the embedded emulator). The app is built in infra/app.py."""

from __future__ import annotations

import aws_cdk as cdk

from infra.app import build_app

if __name__ == "__main__":
    build_app(cdk.App()).synth()
