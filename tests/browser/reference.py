#!/usr/bin/env python3
"""The API reference in a real browser (make test-browser): `vigil serve --demo` on a fresh
database; Debian's Chromium opens /docs and /v1/docs, Redoc (vendored, served by Vigil) renders
/openapi.yaml, and every operation of openapi.yaml must be on the page, under its own anchor and
in the side menu, with no Content-Security-Policy violation and no request leaving the origin.
A screenshot is kept in target/browser/reference.png (docs/reference.png is a copy of it).
"""

import sys
import tempfile
import time
from pathlib import Path

import yaml
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from demo import CHROMIUM, QUIET, ROOT, SHOTS, Server  # noqa: E402

# Redoc's credit link shows Redocly's logo from their CDN; the page's CSP refuses it before any
# request is made, and Redoc then drops the image (the credit's text stays). Nothing else may be
# refused or fetched from elsewhere.
CREDIT_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def operations():
    doc = yaml.safe_load((ROOT / "openapi.yaml").read_text())
    return [(m.upper(), path, op["operationId"], op.get("summary", ""))
            for path, item in doc["paths"].items() for m, op in item.items() if m in METHODS]


def main():
    ops = operations()
    SHOTS.mkdir(parents=True, exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(tmp)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=QUIET)
                for path in ("/docs", "/v1/docs"):
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    problems, foreign = [], []
                    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
                    page.on("pageerror", lambda e: problems.append(str(e)))
                    origin = f"http://127.0.0.1:{srv.port}"
                    page.on("request", lambda r: None if r.url.startswith((origin, "data:", "blob:"))
                            or r.url == CREDIT_LOGO else foreign.append(r.url))
                    t0 = time.time()
                    page.goto(f"{origin}{path}")
                    # Redoc puts each operation under id="operation/{operationId}" once rendered.
                    page.wait_for_selector(f'[id="operation/{ops[-1][2]}"]', timeout=30_000)
                    rendered_ms = (time.time() - t0) * 1000
                    missing = [f"{m} {p} ({oid})" for m, p, oid, _ in ops
                               if page.locator(f'[id="operation/{oid}"]').count() == 0]
                    menu = page.locator("ul[role=menu] label").all_inner_texts()
                    menu_text = "\n".join(menu)
                    unlisted = [oid for _, _, oid, summary in ops if summary and summary.split("`")[0].strip()[:40] not in menu_text]
                    problems = [p for p in problems if not (CREDIT_LOGO in p and "Content Security Policy" in p)]
                    logo = page.locator(f'img[src="{CREDIT_LOGO}"]').count()
                    if logo:
                        failures.append(f"{path}: the refused credit logo is still on the page")
                    print(f"{path}: {len(ops)} operations, {len(ops) - len(missing)} rendered with their anchor, "
                          f"{len(ops) - len(unlisted)} in the side menu, rendered in {rendered_ms:.0f} ms, "
                          f"{len(problems)} console errors, {len(foreign)} requests off the origin")
                    if missing:
                        failures.append(f"{path}: not rendered: {missing}")
                    if unlisted:
                        failures.append(f"{path}: not in the menu: {unlisted}")
                    if problems:
                        failures.append(f"{path}: console errors: {problems[:5]}")
                    if foreign:
                        failures.append(f"{path}: requests off the origin: {foreign[:5]}")
                    if path == "/docs":
                        page.locator(f'[id="operation/{ops[0][2]}"]').scroll_into_view_if_needed()
                        page.evaluate("window.scrollTo(0, 0)")
                        page.screenshot(path=str(SHOTS / "reference.png"))
                    page.close()
                browser.close()
        finally:
            srv.stop()
    if failures:
        sys.exit("reference: " + "; ".join(failures))
    print(f"reference: every operation of openapi.yaml on the page; screenshot {SHOTS / 'reference.png'}")


if __name__ == "__main__":
    main()
