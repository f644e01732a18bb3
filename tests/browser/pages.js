#!/usr/bin/env node
// The quiet scraper in puppeteer (make test-browser, tests/browser/quiet.py): headful on the
// display Xvfb gives, opening each URL in turn in one tab by goto, DWELL_MS on each, no input.
// Usage: node pages.js DRIVER DWELL_MS URL...
//   DRIVER: stealth (puppeteer-core with puppeteer-extra's stealth plugin), rebrowser
//   (rebrowser-puppeteer-core, its protocol leaks patched), real-browser (puppeteer-real-browser:
//   chrome-launcher's flags and rebrowser underneath). Every one drives Debian's Chromium.
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const QUIET = ["--no-first-run", "--disable-background-networking", "--disable-component-update"];
if (process.getuid && process.getuid() === 0) QUIET.push("--no-sandbox");

async function launch(driver) {
  if (driver === "real-browser") {
    const { connect } = require("puppeteer-real-browser");
    // Its own Xvfb is off: the test's display is the one it would start.
    const { browser, page } = await connect({
      headless: false,
      disableXvfb: true,
      turnstile: false,
      customConfig: { chromePath: CHROMIUM },
      args: ["--disable-background-networking"],
    });
    return { browser, page };
  }
  let puppeteer;
  if (driver === "stealth") {
    const { addExtra } = require("puppeteer-extra");
    puppeteer = addExtra(require("puppeteer-core"));
    puppeteer.use(require("puppeteer-extra-plugin-stealth")());
  } else if (driver === "rebrowser") {
    puppeteer = require("rebrowser-puppeteer-core");
  } else {
    throw new Error(`unknown driver ${driver}`);
  }
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: false,
    defaultViewport: null,
    ignoreDefaultArgs: ["--enable-automation"],
    args: [...QUIET, "--disable-blink-features=AutomationControlled"],
  });
  return { browser, page: await browser.newPage() };
}

(async () => {
  const [driver, dwell, ...urls] = process.argv.slice(2);
  const { browser, page } = await launch(driver);
  try {
    for (const url of urls) {
      await page.goto(url);
      await page.waitForSelector("body[data-state=done]", { timeout: 30000 });
      await new Promise((r) => setTimeout(r, Number(dwell)));
    }
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
