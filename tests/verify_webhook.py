"""Verifies one webhook delivery with the official Standard Webhooks library from PyPI, given the
secret string exactly as Vigil's API returned it (`Webhook(secret)`). Reads
{"secret", "headers", "body"} as JSON on stdin; prints `verified` or `refused`.
Used by tests/webhooks.rs."""

import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

msg = json.load(sys.stdin)
try:
    Webhook(msg["secret"]).verify(msg["body"], msg["headers"])
    print("verified")
except WebhookVerificationError:
    print("refused")
