#!/usr/bin/env node
// One visit of the demo page by puppeteer-core with puppeteer-extra's stealth plugin (every default
// evasion), driving Debian's Chromium: the scraper's best disguise, for make test-browser.
// Usage: node stealth.js URL SCREENSHOT  (prints {"collectMs": N} when the page is done)
const { addExtra } = require("puppeteer-extra");
const Stealth = require("puppeteer-extra-plugin-stealth");

const [url, screenshot] = process.argv.slice(2);
const puppeteer = addExtra(require("puppeteer-core"));
puppeteer.use(Stealth());

(async () => {
  const args = ["--no-first-run", "--disable-background-networking", "--disable-component-update"];
  if (process.getuid && process.getuid() === 0) args.push("--no-sandbox");
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args,
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1100, height: 900 });
    await page.goto(url);
    await page.waitForSelector("body[data-state=done]", { timeout: 30000 });
    await page.screenshot({ path: screenshot, fullPage: true });
    const ms = await page.evaluate(() => Number(document.body.dataset.collectMs));
    console.log(JSON.stringify({ collectMs: ms }));
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
