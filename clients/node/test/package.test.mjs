// The installed package: both module formats load, and they agree.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import * as esm from "vigil-client";

const require = createRequire(import.meta.url);

test("require() and import give the same API", () => {
  const cjs = require("vigil-client");
  assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort());
  assert.equal(typeof cjs.Vigil, "function");
  assert.equal(cjs.Vigil.sessionToken("sk", "s", 60).split(".")[0].length, 10);
  assert.equal(new cjs.NotFoundError("x", 404).name, "NotFoundError");
});

test("VERSION is the package's version, which is the API's major", () => {
  const { version } = require("vigil-client/package.json");
  assert.equal(esm.Vigil.VERSION, version);
  assert.equal(version.split(".")[0], "1");
});

test("constructing without an apiKey fails at once, not at the first call", () => {
  const saved = process.env.VIGIL_API_KEY;
  delete process.env.VIGIL_API_KEY;
  try {
    assert.throws(() => new esm.Vigil({ baseUrl: "http://127.0.0.1:1" }), TypeError);
  } finally {
    process.env.VIGIL_API_KEY = saved;
  }
});
