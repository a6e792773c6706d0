// What the browser tests do and read inside an open page (browser.ts opens the pages and
// re-exports these): signing in, waiting for titles and texts, screenshots, sockets and answers a
// test holds back.
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";

/** Where the tests leave one screenshot per page, to look at. */
export const SCREENSHOTS = join(tmpdir(), "ao-web-screenshots");

/**
 * Keeps the page's WebSockets reachable as `window.__sockets` (to drop one as a network would)
 * and records their close codes in `window.__closes`. Call it before the page loads.
 */
export async function trackSockets(page: Page): Promise<void> {
  await page.addInitScript(`(() => {
    const sockets = (window.__sockets = []);
    const Native = window.WebSocket;
    window.WebSocket = class extends Native {
      constructor(url, protocols) {
        super(url, protocols);
        sockets.push(this);
        this.addEventListener("close", (e) => (window.__closes = [...(window.__closes ?? []), e.code]));
      }
    };
  })()`);
}

/**
 * Lets a test hold back the answers of the page's API calls whose address contains `window.__hold`
 * (null: none): each waits in `window.__held` until the test calls it. The request has been
 * answered by then, so a held answer is the server's state of before what the test does next.
 * Call it before the page loads.
 */
export async function holdAnswers(page: Page): Promise<void> {
  await page.addInitScript(`(() => {
    const native = window.fetch;
    window.__held = [];
    window.__hold = null;
    window.fetch = (input, init) => {
      const url = typeof input === "string" ? input : input.url;
      const hold = window.__hold !== null && url.includes(window.__hold);
      const answer = native(input, init);
      return hold ? answer.then((res) => new Promise((resolve) => window.__held.push(() => resolve(res)))) : answer;
    };
  })()`);
}

/** A phone's viewport, for the phone layout's tests. */
export const PHONE = { width: 375, height: 740 };
/** The viewport of the README's screenshots. */
export const DESKTOP = { width: 1280, height: 800 };

/** Where the README's screenshots live (docs/screenshots/*.png, light theme, 1280x800). */
export const DOCS_SCREENSHOTS = join(import.meta.dir, "..", "..", "docs", "screenshots");

/** A screenshot for the README: the viewport as a person sees it (use a DESKTOP page). */
export async function docsScreenshot(page: Page, name: string) {
  mkdirSync(DOCS_SCREENSHOTS, { recursive: true });
  await page.emulateMedia({ colorScheme: "light", reducedMotion: "reduce" });
  await page.screenshot({ path: join(DOCS_SCREENSHOTS, `${name}.png`) });
}

/** Whether the page is wider than the window (something sticks out sideways: a phone layout bug). */
export async function overflowsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    const root = (globalThis as any).document.documentElement;
    return root.scrollWidth > root.clientWidth + 1;
  });
}

/**
 * Opens `url`, waits for the sign-in form (with `why` above it, when given), signs in and waits
 * until the form is gone (the page itself shows then).
 */
export async function openSignedIn(page: Page, url: string, email: string, password: string, why?: string) {
  await page.goto(url);
  if (why) await page.getByText(why).waitFor();
  else await page.locator("#signin-form").waitFor();
  await signInWithForm(page, email, password);
  await page.locator("#signin").waitFor({ state: "detached" });
}

/** Opens a task's page (the link callbacks send), signs in as `who`, and waits until the task shows and is live. */
export async function openTaskPage(page: Page, url: string, who: { email: string }, password: string, title?: string) {
  await page.goto(url);
  await page.getByText("Sign in to see the task.").waitFor();
  await signInWithForm(page, who.email, password);
  if (title) await page.getByRole("heading", { name: title }).waitFor();
  await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
}

export async function screenshot(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Fills and submits the sign-in form that every page shows when nobody is signed in. */
export async function signInWithForm(page: Page, email: string, password: string) {
  const form = page.locator("#signin-form");
  await form.getByLabel("Email").fill(email);
  await form.getByLabel("Password").fill(password);
  await form.getByRole("button", { name: "Sign in" }).click();
}

/** Waits for the tab's title: pages set it in an effect, after the render a test waits for. */
export async function titled(page: Page, title: string): Promise<void> {
  await page.waitForFunction((t) => (globalThis as any).document.title === t, title);
}

/** The text of an element once it is shown (errors and outcomes appear after the server answers). */
export async function shownText(page: Page, selector: string): Promise<string> {
  const el = page.locator(`${selector}:not([hidden])`);
  await el.waitFor({ state: "visible" });
  return (await el.textContent()) ?? "";
}
