// Drives Debian's headless Chromium through tests/browser/page.html's
// scenarios: `node browser.mjs <page-url> <scenario>...`. Prints one JSON
// object, scenario name -> report (or {error}), on stdout.
import { chromium } from "playwright-core";

const [url, ...names] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // The machine's network is closed: no background fetches, no QUIC.
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const results = {};
try {
  for (const name of names) {
    const page = await browser.newPage();
    await page.goto(url);
    try {
      results[name] = await page.evaluate((n) => window.scenarios[n](), name);
    } catch (error) {
      results[name] = { error: String(error) };
    }
    await page.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
