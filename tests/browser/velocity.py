#!/usr/bin/env python3
"""Memory across sessions in a real browser (make test-browser; issue 30): a person's Chromium
under Xvfb, nothing attached and nothing automated, opens thirty sessions of `vigil serve
--demo`'s page within about a minute from one address, its first page at launch and the rest in
new tabs the running browser opens. No single visit shows anything; together they do:

- the first three sessions score as a person (scoreBot < 0.5);
- by the thirtieth, `session_churn` has fired on the device key and scoreBot >= 0.9;
- every session of the profile has one device key, and Firefox ESR on the same machine gets
  another.

A fresh server and database of its own, so no other test's sessions count here.
"""

import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

from demo import Display, Server, codes, firefox_person, person_chromium_visits

SESSIONS = 30


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(tmp)
        try:
            with sync_playwright() as pw, Display() as display:
                started = time.time()
                events, _ = person_chromium_visits(server, pw, tmp, display, SESSIONS - 1)
                took = time.time() - started
                firefox, _ = firefox_person(server, tmp, display)
        finally:
            server.stop()
    for i, e in enumerate(events, 1):
        print(f"session {i:2} scoreBot={e['scoreBot']:<6} device={e['device']} reasons={codes(e)}")
    print(f"{len(events)} sessions in {took:.0f} s; Firefox ESR: device={firefox['device']} "
          f"scoreBot={firefox['scoreBot']} reasons={codes(firefox)}")
    if took > 90:
        failures.append(f"{len(events)} sessions took {took:.0f} s, not about a minute")
    first = [e["scoreBot"] for e in events[:3]]
    if not all(s < 0.5 for s in first):
        failures.append(f"the first three sessions scored {first}")
    last = events[-1]
    if last["scoreBot"] < 0.9 or "session_churn" not in codes(last):
        failures.append(f"session {len(events)}: scoreBot {last['scoreBot']} with {codes(last)}")
    churn = [r["detail"] for r in last["reasons"] if r["code"] == "session_churn"]
    if churn and "from one device" not in churn[0]:
        failures.append(f"session_churn was not the device's: {churn[0]}")
    keys = {e["device"] for e in events}
    if len(keys) != 1 or None in keys:
        failures.append(f"one profile, device keys {keys}")
    if firefox["device"] in keys or firefox["device"] is None:
        failures.append(f"Firefox ESR's device key {firefox['device']} is not its own")
    print(f"{0 if failures else 1} passed, {len(failures)} failed")
    if failures:
        sys.exit("velocity:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
