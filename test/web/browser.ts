// A real headless Chromium (Debian's package at /usr/bin/chromium) driven by playwright-core.
// CI installs it (.ci/run); there a missing browser is a failing test. On a developer's machine
// without it the browser tests are skipped, with a line saying so.
import { describe, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
const missing = !existsSync(CHROMIUM);

/** Where the tests leave one screenshot per page, to look at. */
export const SCREENSHOTS = join(tmpdir(), "ao-web-screenshots");

/** describe() for tests that need the browser. */
export function describeBrowser(name: string, body: () => void) {
  if (!missing) return describe(name, body);
  if (process.env.CI) {
    return describe(name, () => {
      test(`${CHROMIUM} is installed`, () => {
        throw new Error(`${CHROMIUM} is missing: the web app's browser tests need Debian's chromium (apt-get install -y chromium; .ci/run does it)`);
      });
    });
  }
  console.warn(`[web] ${CHROMIUM} is missing: skipping "${name}" (apt-get install -y chromium to run it; CI fails instead)`);
  return describe.skip(name, body);
}

export function launchBrowser(): Promise<Browser> {
  // launch() gives every browser a fresh, temporary user-data directory.
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

export interface OpenedPage {
  page: Page;
  context: BrowserContext;
  /** Console errors and uncaught exceptions of the page (expected API refusals left out). */
  problems: string[];
  close(): Promise<void>;
}

/** A new browser context (own cookies) with one page, its problems recorded. */
export async function openPage(browser: Browser, viewport = { width: 900, height: 760 }): Promise<OpenedPage> {
  const context = await browser.newContext({ viewport, locale: "en-GB", timezoneId: "UTC" });
  const page = await context.newPage();
  // Generous: the machine may be busy with other suites; a real failure still ends the test.
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`uncaught: ${err.message}`));
  page.on("console", (msg) => {
    // A 401 of the session check or a 4xx the page shows to the person is not a page bug.
    if (msg.type() === "error" && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(msg.text())) {
      problems.push(msg.text());
    }
  });
  return { page, context, problems, close: () => context.close() };
}

export async function screenshot(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Fills and submits the sign-in form that every page shows when nobody is signed in. */
export async function signInWithForm(page: Page, email: string, password: string) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** The text of an element once it is shown (errors and outcomes appear after the server answers). */
export async function shownText(page: Page, selector: string): Promise<string> {
  const el = page.locator(`${selector}:not([hidden])`);
  await el.waitFor({ state: "visible" });
  return (await el.textContent()) ?? "";
}
