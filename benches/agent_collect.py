#!/usr/bin/env python3
"""The browser agent's collection time (from `Vigil.collect` to the send), over N visits of
`vigil serve --demo`'s /demo page by the browser matrix's disguised Playwright Chromium (headless,
stealth launch options, a borrowed user agent), each in a browser launched for it, as in
`make test-browser`. With --agent FILE the page gets that file as /v1/agent.js instead of the
built one, so a change to the agent can be compared before it is built (run both in one session:
on this 2-core machine the figure moves by 10 ms between sessions).

With --person the visits are a person's instead: Chromium under Xvfb started without a driver,
its first page at launch and the rest in new tabs the running browser opens, read over DevTools
only after all arrived (as `make test-browser`'s person-chromium); this measures what a
visitor's page pays, without the driver's own work (Playwright holds every new Worker until it
resumes it). A variant cannot be routed in without a driver, so --person takes the built agent.

    make bench-agent                      # 20 driven visits of the built agent
    make bench-agent N=40 AGENT=my.js     # a variant
    make bench-agent PERSON=1             # 20 visits of a person's Chromium
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))
import demo  # noqa: E402  (the matrix's server, browser and disguise)

from playwright.sync_api import sync_playwright  # noqa: E402


def driven_visits(server, pw, visits, agent=None):
    """The matrix's disguised Playwright Chromium, a fresh browser per visit; `agent` replaces
    /v1/agent.js. Returns the collection times."""
    times = []
    for _ in range(visits):
        browser = pw.chromium.launch(executable_path=demo.CHROMIUM, headless=True,
                                     args=demo.QUIET + demo.STEALTH_ARGS,
                                     ignore_default_args=["--enable-automation"])
        try:
            page = browser.new_context(viewport={"width": 1100, "height": 900},
                                       user_agent=demo.WIN_UA).new_page()
            if agent:
                page.route("**/v1/agent.js", lambda r: r.fulfill(path=str(agent), content_type="text/javascript"))
            page.goto(server.demo_url(demo.session_id("bench")))
            page.wait_for_selector("body[data-state=done]", timeout=30_000)
            times.append(page.evaluate("Number(document.body.dataset.collectMs)"))
        finally:
            browser.close()
    return times


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--visits", type=int, default=20)
    args.add_argument("--agent", type=Path, help="serve this file as /v1/agent.js")
    args.add_argument("--person", action="store_true", help="a person's Chromium, no driver")
    opts = args.parse_args()
    if opts.person and opts.agent:
        args.error("--person measures the built agent; --agent needs a driver to route the file in")
    with tempfile.TemporaryDirectory() as tmp:
        server = demo.Server(tmp)
        try:
            with sync_playwright() as pw:
                if opts.person:
                    with demo.Display() as display:
                        _, times = demo.person_chromium_visits(server, pw, tmp, display, opts.visits - 1)
                else:
                    times = driven_visits(server, pw, opts.visits, opts.agent)
        finally:
            server.stop()
    times.sort()
    what = "a person's Chromium, built agent" if opts.person else f"driven, {opts.agent or 'built agent'}"
    print(f"agent collection time over {len(times)} visits ({what}): "
          f"p50 {statistics.median(times):.0f} ms, p90 {times[int(0.9 * (len(times) - 1))]} ms, "
          f"max {times[-1]} ms; all {times}")


if __name__ == "__main__":
    main()
