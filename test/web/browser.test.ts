// The browser tests' own helper (browser.ts): a page whose opening or closing stalls (the driver's
// answers kept back, as when one went missing) fails its usePage in seconds, saying which call
// stalled and, for a close, at which address; the browser then serves the next page as before.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { describeBrowser, launchBrowser, Stalled, stallDriver, usePage, type OpenedPage } from "./browser";

describeBrowser("web: the browser tests' usePage", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  const ADDRESS = "data:text/html,<p>shown</p>";
  const show = async ({ page }: OpenedPage) => {
    await page.goto(ADDRESS);
    return page.locator("p").textContent();
  };
  const failure = (run: Promise<unknown>) => run.then(() => null, (err: unknown) => err);

  test("an opening that stalls fails after its bound, naming the call; the next page opens", async () => {
    const resume = stallDriver(browser);
    let ran = false;
    const err = await failure(usePage(browser, async () => (ran = true), undefined, undefined, { openMs: 1000 }));
    resume();
    expect(err).toBeInstanceOf(Stalled);
    expect((err as Error).message).toBe("opening a page (browser.newContext()) did not finish within 1 s");
    expect(ran).toBe(false);
    await expect(usePage(browser, show)).resolves.toBe("shown");
  }, 90_000);

  /** What usePage threw when its close stalled: the driver's answers are kept back once `steps` ended, until usePage has. */
  const closeStalled = async (steps: (opened: OpenedPage) => Promise<unknown>) => {
    let resume = () => {};
    const held = async (opened: OpenedPage) => {
      try {
        return await steps(opened);
      } finally {
        resume = stallDriver(browser);
      }
    };
    const err = await failure(usePage(browser, held, undefined, undefined, { closeMs: 1000 }));
    resume();
    return err;
  };

  test("a close that stalls after the steps succeeded fails after its bound, naming the page's address; the next page opens", async () => {
    const err = await closeStalled(show);
    expect(err).toBeInstanceOf(Stalled);
    expect((err as Error).message).toBe(`closing the page (${ADDRESS}) did not finish within 1 s`);
    await expect(usePage(browser, show)).resolves.toBe("shown");
  }, 90_000);

  test("steps that fail and then a close that stalls: the steps' failure is reported, the stalled close after it", async () => {
    const err = await closeStalled(async (opened) => {
      await show(opened);
      throw new Error("the step failed");
    });
    expect(err).not.toBeInstanceOf(Stalled);
    const lines = (err as Error).message.split("\n");
    expect(lines[0]).toBe("the step failed");
    expect(lines.at(-1)).toBe(`then: closing the page (${ADDRESS}) did not finish within 1 s`);
    await expect(usePage(browser, show)).resolves.toBe("shown");
  }, 90_000);
});
