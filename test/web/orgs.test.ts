// The person's organizations as every page sees them (app/session.ts, app/live.ts): a person
// removed from an organization sees each page that followed it say its live updates stopped.
import { expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember } from "../helpers/identity";
import { makeTask, makeWorld, putInState, type World } from "../tasks/fixtures";
import { describeBrowser, usePage, webSuite } from "./browser";
import { openAs } from "./manage-fixtures";

describeBrowser("web: the person's organizations", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  webSuite(async (up) => {
    ({ s, browser } = up);
    w = await makeWorld(s);
  });

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
