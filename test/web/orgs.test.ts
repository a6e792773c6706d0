// The person's organizations as every page sees them (app/session.ts, app/live.ts,
// components/NeedsOrgs.tsx): when they cannot be loaded, the pages that need them say so (never
// "you are in no organization") and ask again, on Retry, on the way to another page and by
// themselves after a pause (the page's long timers are held, so that each way is seen on its own); a
// person removed from an organization sees each page that followed it say its live updates stopped.
import { expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember } from "../helpers/identity";
import { makeTask, putInState, type World } from "../tasks/fixtures";
import { describeBrowser, titled, usePage, worldSuite } from "./browser";
import { openAs } from "./manage-fixtures";

describeBrowser("web: the person's organizations", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  /**
   * The page's timers of 2 s or more wait until the test runs them (`window.__runHeld()`), so that
   * each way of asking again is seen on its own; its loads of the person's organizations
   * (GET /orgs) answer 503 while `failing.now`, and are counted.
   */
  async function orgsFailing(page: Page) {
    const failing = { now: true, asked: 0 };
    await page.addInitScript(`(() => {
      const held = new Map();
      let next = 1e9;
      const setNative = window.setTimeout.bind(window);
      const clearNative = window.clearTimeout.bind(window);
      window.setTimeout = (fn, ms, ...args) => {
        if (typeof fn !== "function" || !(ms >= 2000)) return setNative(fn, ms, ...args);
        held.set(++next, () => fn(...args));
        return next;
      };
      window.clearTimeout = (id) => void (held.delete(id) || clearNative(id));
      window.__runHeld = () => {
        const due = [...held.values()];
        held.clear();
        for (const fn of due) fn();
        return due.length;
      };
    })()`);
    await page.route(/\/api\/v1\/orgs(\?.*)?$/, (route) => {
      failing.asked++;
      if (!failing.now) return route.continue();
      return route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "unavailable", message: "the database is busy" } }) });
    });
    return failing;
  }
  /** What the page says while they cannot be loaded. */
  async function saysNotLoaded(page: Page) {
    const box = page.locator("#orgs-error");
    await box.getByText("Could not load your organizations. The database is busy.").waitFor();
    await box.getByRole("button", { name: "Retry" }).waitFor();
    const main = (await page.locator("main").textContent()) ?? "";
    expect(main).not.toContain("no organization");
    expect(main).not.toContain("not found");
  }
  /** The browser's own line for each 503 answer is expected here. */
  const unexpected = (problems: string[]) => problems.filter((p) => !p.includes("the server responded with a status of 503"));

  test("the organizations cannot be loaded: every page that needs them says so with Retry (never 'no organization'); Retry shows the page once the server answers", async () => {
    const t = (await makeTask(s, w.owner, w.project.id, { title: "Behind a busy database" })) as { id: string };
    await usePage(browser, async ({ page, problems }) => {
      const failing = await orgsFailing(page);
      await openAs(s, page, w.owner, "/tasks");
      for (const path of ["/tasks", "/projects", "/workers", "/settings", "/integrations", `/tasks/${t.id}`]) {
        await page.goto(`${s.url}${path}`);
        await saysNotLoaded(page);
        await titled(page, "Organizations not loaded · ao");
      }
      failing.now = false;
      await page.locator("#orgs-error").getByRole("button", { name: "Retry" }).click();
      await page.getByRole("heading", { name: "Behind a busy database" }).waitFor();
      await expect(page.locator("#orgs-error").count()).resolves.toBe(0);
      expect(unexpected(problems)).toEqual([]);
    });
  }, 90_000);

  test("organizations that failed to load are asked for again by themselves after a pause, and on the way to another page", async () => {
    await usePage(browser, async ({ page, problems }) => {
      const failing = await orgsFailing(page);
      await openAs(s, page, w.owner, "/tasks");
      await saysNotLoaded(page);
      // By itself: once its pause has passed (the held timer runs), without a reload.
      await page.evaluate("window.__stayed = true");
      const asked = failing.asked;
      failing.now = false;
      expect(await page.evaluate<number>("window.__runHeld()")).toBeGreaterThan(0);
      await page.locator("#tasks-org-name").waitFor();
      expect(failing.asked).toBe(asked + 1);
      await expect(page.evaluate("window.__stayed")).resolves.toBe(true);

      // On the way to another page: a failed load (here the first of a new page) is asked again at
      // once, its timer still held.
      failing.now = true;
      await page.goto(`${s.url}/projects`);
      await saysNotLoaded(page);
      failing.now = false;
      await page.locator("#sidebar").getByRole("link", { name: "Workers" }).click();
      await page.locator("#workers-page").waitFor();
      await expect(page.locator("#orgs-error").count()).resolves.toBe(0);
      expect(unexpected(problems)).toEqual([]);
    });
  }, 90_000);

  test("removed from the organization while its task is open: the task page says its live updates stopped (not 'live')", async () => {
    const viewer = await addMember(s, w.owner, "viewer");
    const t = (await makeTask(s, w.owner, w.project.id, { title: "Watched by a viewer" })) as { id: string };
    await usePage(browser, async ({ page, problems }) => {
      await openAs(s, page, viewer, `/tasks/${t.id}`);
      await page.getByRole("heading", { name: "Watched by a viewer" }).waitFor();
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      expect((await s.api("DELETE", `/orgs/${w.owner.orgId}/members/${viewer.userId}`, { token: w.owner.accessToken })).status).toBe(204);
      // The task page's own subscription (org and task) ends too, not only the sidebar's (the whole org).
      await page.locator("#live-state", { hasText: "live updates stopped: You are no longer a member of this organization." }).waitFor();
      putInState(s, t.id, "running");
      await expect(page.locator("#live-state").textContent()).resolves.toStartWith("live updates stopped");
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
