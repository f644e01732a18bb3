#!/usr/bin/env node
// The quiet scraper in puppeteer: puppeteer-core with puppeteer-extra's stealth plugin, headful
// (a display from Xvfb), opening each URL in turn in one tab by goto, DWELL_MS on each, no input.
// Usage: node pages.js DWELL_MS URL...  (make test-browser, tests/browser/quiet.py)
const { addExtra } = require("puppeteer-extra");
const Stealth = require("puppeteer-extra-plugin-stealth");

const [dwell, ...urls] = process.argv.slice(2);
const puppeteer = addExtra(require("puppeteer-core"));
puppeteer.use(Stealth());

(async () => {
  const args = ["--no-first-run", "--disable-background-networking", "--disable-component-update"];
  if (process.getuid && process.getuid() === 0) args.push("--no-sandbox");
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: false,
    defaultViewport: null,
    ignoreDefaultArgs: ["--enable-automation"],
    args,
  });
  try {
    const page = await browser.newPage();
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
