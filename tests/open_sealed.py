"""Opens a sealed verdict as a Python backend would: jwcrypto with the keys exactly as
`GET /v1/projects/{id}/sealing-key` answers them (tests/sealed.rs, tests/store_conformance.rs).

stdin: {"keys": [JWK, ...], "sealed": "<JWE>", "expect": {"sessionId": ..., "origin": ...}}.
Prints the verdict's claims as JSON, or `refused: <why>`: a backend trusts a verdict only if it
opens under one of its project's keys, has not expired, and names the session and origin it
expects.
"""

import json
import sys
import time

from jwcrypto import jwe, jwk

given = json.load(sys.stdin)
keys = jwk.JWKSet()
for k in given["keys"]:
    keys.add(jwk.JWK(**k))
token = jwe.JWE()
try:
    token.deserialize(given["sealed"], key=keys)
except Exception as e:  # any failure to open is a refusal, whatever the library calls it
    print(f"refused: {type(e).__name__}")
    sys.exit(0)
claims = json.loads(token.payload)
if claims["exp"] <= time.time():
    print("refused: expired")
    sys.exit(0)
for name, value in given.get("expect", {}).items():
    if claims.get(name) != value:
        print(f"refused: {name} is {claims.get(name)!r}")
        sys.exit(0)
print(json.dumps(claims))
