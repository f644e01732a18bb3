#!/usr/bin/env node
// The acting scraper in Node (make test-browser, tests/browser/acting.py): a humanizer library's
// cursor, headful on the display Xvfb gives, browsing the demo shop as its README shows. The first
// URL by goto; on each page it waits DWELL_MS, scrolls a little by wheel, then moves its humanized
// cursor to the next link (the link bar's first tile) and clicks it with the library's own API.
// Usage: node acting.js DRIVER DWELL_MS PROBE_FILE URL...
//   DRIVER: ghost-cursor (ghost-cursor on rebrowser-puppeteer-core), ghost-cursor-playwright (on
//   patchright), real-browser (puppeteer-real-browser's page.realCursor / page.realClick).
//   PROBE_FILE: a script added to every document before the page's own (ACTING_DEBUG), or "-".
// Every one drives Debian's Chromium; none downloads a browser.
const fs = require("fs");
const os = require("os");
const path = require("path");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const QUIET = ["--no-first-run", "--no-default-browser-check", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--disable-quic"];
if (process.getuid && process.getuid() === 0) QUIET.push("--no-sandbox");
const WINDOW = ["--window-position=0,0", "--window-size=1280,900"];
const NEXT = "#shop a:first-child";
// The probe's reports kept in the tab's sessionStorage, printed for acting.py (patchright's pages
// send no beacon to the probe server).
const STORED = "Object.keys(sessionStorage).filter((k) => k.startsWith('acting.debug.')).map((k) => sessionStorage.getItem(k))";
const report = (values) => console.log(`ACTING_REPORTS ${JSON.stringify(values || [])}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const jitter = (ms) => ms * (0.8 + Math.random() * 0.4);

// Clicks the next link and waits for the page it opens. A press that missed (on a busy machine
// the page can still be settling from the scroll when it lands) leaves the page where it was: the
// scraper clicks again, as its user would, up to three times, and says so on stderr.
async function clickThrough(page, click) {
  const before = page.url();
  for (let attempt = 1; attempt <= 3; attempt++) {
    const left = page.waitForNavigation({ timeout: 15000 }).then(() => true, () => page.url() !== before);
    await click();
    if (await left) return;
    console.error(`acting: click ${attempt} on ${NEXT} left ${before} where it was`);
  }
  throw new Error(`three clicks on ${NEXT} did not leave ${before}`);
}

async function puppeteerPage(driver) {
  if (driver === "real-browser") {
    const { connect } = require("puppeteer-real-browser");
    // Its own Xvfb is off: the test's display is the one it would start.
    const { browser, page } = await connect({
      headless: false,
      disableXvfb: true,
      turnstile: false,
      customConfig: { chromePath: CHROMIUM },
      args: ["--disable-background-networking", ...WINDOW],
    });
    return { close: () => browser.close(), page };
  }
  const puppeteer = require("rebrowser-puppeteer-core");
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: false,
    defaultViewport: null,
    ignoreDefaultArgs: ["--enable-automation"],
    args: [...QUIET, ...WINDOW, "--disable-blink-features=AutomationControlled"],
  });
  return { close: () => browser.close(), page: await browser.newPage() };
}

async function runPuppeteer(driver, dwell, probe, urls) {
  const { close, page } = await puppeteerPage(driver);
  try {
    if (probe) await page.evaluateOnNewDocument(probe);
    let cursor;
    if (driver === "real-browser") {
      cursor = page.realCursor;
    } else {
      const { createCursor } = require("ghost-cursor");
      cursor = createCursor(page);
    }
    await page.goto(urls[0]);
    for (let i = 0; i < urls.length; i++) {
      await page.waitForSelector("body[data-state=done]", { timeout: 30000 });
      await sleep(jitter(dwell));
      if (i === urls.length - 1) break;
      // ghost-cursor's own scroll (CDP mouseWheel events), a little.
      await cursor.scroll({ y: 150 + Math.round(Math.random() * 150) });
      await sleep(jitter(500));
      // page.realClick is cursor.click unbound (its `this` is the page): with ghost-cursor 1.4
      // it throws "this.toggleRandomMove is not a function". The same cursor's click, bound.
      await clickThrough(page, () => cursor.click(NEXT));
    }
    if (probe) report(await page.evaluate(STORED));
  } finally {
    await close();
  }
}

async function runPatchright(dwell, probe, urls) {
  const { chromium } = require("patchright");
  const { createCursor } = require("ghost-cursor-playwright");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acting-gcp-"));
  // As patchright's README recommends: a persistent context, headful, no viewport.
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM, headless: false, viewport: null,
    args: [...QUIET.filter((a) => a === "--no-sandbox"), ...WINDOW],
  });
  try {
    if (probe) await ctx.addInitScript(probe);
    const page = ctx.pages()[0] || (await ctx.newPage());
    // Made before the first page, as its example does: it tracks the pointer's position and
    // target in each page from the page's load event on (window.mousePos, window.mouseTarget).
    const cursor = await createCursor(page);
    await page.goto(urls[0]);
    for (let i = 0; i < urls.length; i++) {
      await page.waitForSelector("body[data-state=done]", { timeout: 30000 });
      await sleep(jitter(dwell));
      if (i === urls.length - 1) break;
      // ghost-cursor-playwright has no scroll of its own (it scrolls into view with mouse.wheel):
      // the page's mouse wheel, as it does.
      await page.mouse.wheel(0, 100);
      await sleep(jitter(300));
      await page.mouse.wheel(0, 100);
      await sleep(jitter(500));
      await clickThrough(page, () => cursor.actions.click({ target: NEXT }));
    }
    // patchright evaluates in an isolated world unless told otherwise (its fourth argument).
    if (probe) report(await page.evaluate(STORED, undefined, undefined, false));
  } finally {
    await ctx.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

(async () => {
  const [driver, dwell, probeFile, ...urls] = process.argv.slice(2);
  const probe = probeFile && probeFile !== "-" ? fs.readFileSync(probeFile, "utf8") : null;
  if (driver === "ghost-cursor-playwright") await runPatchright(Number(dwell), probe, urls);
  else if (driver === "ghost-cursor" || driver === "real-browser") await runPuppeteer(driver, Number(dwell), probe, urls);
  else throw new Error(`unknown driver ${driver}`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
