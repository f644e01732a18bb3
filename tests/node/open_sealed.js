// Opens a sealed verdict as a Node backend would: the `jose` library with the keys exactly as
// `GET /v1/projects/{id}/sealing-key` answers them (tests/sealed.rs, tests/store_conformance.rs).
//
// stdin: {"keys": [JWK, ...], "sealed": "<JWE>", "expect": {"sessionId": ..., "origin": ...}}.
// Prints the verdict's claims as JSON, or `refused: <why>`.
const { compactDecrypt, decodeProtectedHeader, importJWK } = require("jose");

async function main() {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  const given = JSON.parse(input);
  let claims;
  try {
    const { kid } = decodeProtectedHeader(given.sealed);
    const jwk = given.keys.find((k) => k.kid === kid);
    if (!jwk) return console.log("refused: no key with this kid");
    const key = await importJWK(jwk, "dir");
    const { plaintext } = await compactDecrypt(given.sealed, key);
    claims = JSON.parse(new TextDecoder().decode(plaintext));
  } catch (e) {
    return console.log(`refused: ${e.code ?? e.name}`);
  }
  if (claims.exp <= Date.now() / 1000) return console.log("refused: expired");
  for (const [name, value] of Object.entries(given.expect ?? {})) {
    if (claims[name] !== value) return console.log(`refused: ${name} is ${JSON.stringify(claims[name])}`);
  }
  console.log(JSON.stringify(claims));
}

main();
