// Compiles src/ twice: ES modules to dist/esm and CommonJS to dist/cjs. Each folder gets a
// package.json naming its module type, so Node reads the .js files right whatever the package's
// own "type" is (it has none: CommonJS by default).
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync("dist", { recursive: true, force: true });
for (const [config, dir, type] of [
  ["tsconfig.esm.json", "dist/esm", "module"],
  ["tsconfig.cjs.json", "dist/cjs", "commonjs"],
]) {
  execFileSync(process.execPath, [tsc, "-p", config], { stdio: "inherit" });
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/package.json`, JSON.stringify({ type }) + "\n");
}
