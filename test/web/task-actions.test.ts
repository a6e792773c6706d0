// The task page's actions that cannot be undone ask first, in place of the buttons (SPEC §5,
// §11): Cancel (it stops a working agent), Restart (it drops what the last attempt reported) and
// Deny of a budget question (it cancels the task). "Keep it" or Escape backs out with the focus on
// the button pressed, the second click of a double-click on the Yes does nothing, and the keys
// wait while the question is shown. What the page asked of the server is read from its own
// record of its POSTs to .../actions, made in the click's or key's handler itself.
import { expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { makeTask, putInState, type World } from "../tasks/fixtures";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { describeBrowser, openSignedIn, screenshot, usePage, worldSuite } from "./browser";

const PASSWORD = "correct horse battery staple";

describeBrowser("web: the task's actions that cannot be undone ask first", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  const task = async (title: string) => ((await makeTask(s, w.owner, w.project.id, { title })) as { id: string }).id;
  const statusOf = async (id: string) => (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}`, { token: w.owner.accessToken })).body.status;

  /** Opens the task signed in as its owner, once it is live; the page records the actions it posts. */
  async function open(page: Page, id: string) {
    await page.addInitScript(`(() => {
      window.__actions = [];
      const native = window.fetch;
      window.fetch = function (input, init) {
        if (init && init.method === "POST" && String(input).endsWith("/actions")) window.__actions.push(JSON.parse(init.body).action);
        return native.apply(this, arguments);
      };
    })()`);
    await openSignedIn(page, `${s.url}/tasks/${id}`, w.owner.email, PASSWORD);
    await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
  }
  const posted = (page: Page) => page.evaluate("window.__actions") as Promise<string[]>;
  const button = (page: Page, name: string) => page.locator("#action-buttons").getByRole("button", { name, exact: true });
  const question = (page: Page, name: RegExp) => page.getByRole("group", { name });
  /** Waits until the focus is on the button named `name`. */
  const focusOn = (page: Page, name: string) => page.waitForFunction((n) => (globalThis as any).document.activeElement?.textContent === n, name);

  test("Cancel asks first: Keep it and Escape back out, the second click of a double-click does nothing, Yes cancels", async () => {
    const id = await task("Long build");
    await putInState(s, id, "running");
    await usePage(browser, async ({ page, problems }) => {
      await open(page, id);
      await page.locator("#task-status", { hasText: "running (attempt 1)" }).waitFor();

      await button(page, "Cancel").click();
      const asked = question(page, /^Cancel this task\? An agent working on it stops now\.$/);
      await asked.waitFor();
      // In place of the buttons, the safe answer focused.
      await expect(page.locator("#action-buttons").count()).resolves.toBe(0);
      await focusOn(page, "Keep it");
      await screenshot(page, "task-cancel-asks");
      await asked.getByRole("button", { name: "Keep it" }).click();
      await button(page, "Cancel").waitFor();
      await focusOn(page, "Cancel");
      expect(await posted(page)).toEqual([]);

      await button(page, "Cancel").click();
      await focusOn(page, "Keep it");
      await page.keyboard.press("Escape");
      await button(page, "Cancel").waitFor();
      await focusOn(page, "Cancel");
      expect(await posted(page)).toEqual([]);

      // A double-click on Cancel: its second click, on the Yes now there, is not a confirmation.
      await button(page, "Cancel").click();
      const yes = asked.getByRole("button", { name: "Yes, cancel" });
      const at = (await yes.boundingBox())!;
      await page.mouse.move(at.x + at.width / 2, at.y + at.height / 2);
      await page.mouse.down({ clickCount: 2 });
      await page.mouse.up({ clickCount: 2 });
      expect(await posted(page)).toEqual([]);
      await expect(asked.isVisible()).resolves.toBe(true);

      await yes.click();
      await page.locator("#task-status", { hasText: /^cancelled( \(attempt \d+\))?$/ }).waitFor();
      expect(await posted(page)).toEqual(["cancel"]);
      expect(await statusOf(id)).toBe("cancelled");
      await page.locator("#timeline li", { hasText: /action cancel by Admin$/ }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("Restart asks first and the keys wait meanwhile; backed out, p pauses again; Yes restarts", async () => {
    const id = await task("Flaky tests");
    await putInState(s, id, "running");
    await usePage(browser, async ({ page, problems }) => {
      await open(page, id);
      await page.locator("#task-status", { hasText: "running (attempt 1)" }).waitFor();
      await button(page, "Restart").click();
      const asked = question(page, /^Restart this task from the beginning\?/);
      await asked.waitFor();
      await focusOn(page, "Keep it");
      // p would pause: not while the question waits.
      await page.keyboard.press("p");
      expect(await posted(page)).toEqual([]);
      await page.keyboard.press("Escape");
      await focusOn(page, "Restart");
      await page.keyboard.press("p");
      await page.locator("#task-status", { hasText: /^paused( \(attempt \d+\))?$/ }).waitFor();
      expect(await posted(page)).toEqual(["pause"]);

      await button(page, "Restart").click();
      await asked.getByRole("button", { name: "Yes, restart" }).click();
      await page.locator("#task-status", { hasText: /^queued( \(attempt \d+\))?$/ }).waitFor();
      expect(await posted(page)).toEqual(["pause", "restart"]);
      expect(await statusOf(id)).toBe("queued");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("after Restart and after Retry, Changes draws no earlier attempt's diff (nor one of an attempt that changed nothing), only the new attempt's", async () => {
    const id = await task("Make the total right");
    const diff = (line: string) => new TextEncoder().encode(`diff --git a/src/total.ts b/src/total.ts\n--- a/src/total.ts\n+++ b/src/total.ts\n@@ -1 +1 @@\n-export const total = 0;\n+${line}\n`);
    const changes = (files: number) => JSON.stringify({ files, additions: files, deletions: files, branch: null, commit: null, base: null, pushed: false });
    await storeArtifact(s.core, w.owner.orgId, id, "changes.diff", diff("export const first = 1;"), 1);
    await putInState(s, id, "completed", { attempt: 1, changes: changes(1) });
    await usePage(browser, async ({ page, problems }) => {
      await open(page, id);
      await page.locator("#diff", { hasText: "export const first = 1;" }).waitFor();

      await button(page, "Restart").click();
      await question(page, /^Restart this task from the beginning\?/).getByRole("button", { name: "Yes, restart" }).click();
      await page.locator("#task-status", { hasText: /^queued/ }).waitFor();
      await page.locator("#changes").waitFor({ state: "detached" });
      await putInState(s, id, "running", { attempt: 2 });
      await page.locator("#task-status", { hasText: "running (attempt 2)" }).waitFor();
      await expect(page.locator("#changes").count()).resolves.toBe(0);
      // Attempt 2 changed nothing: its changes say so, and attempt 1's diff is not drawn as its.
      await putInState(s, id, "completed", { attempt: 2, changes: changes(0) });
      await page.locator("#changes-summary", { hasText: "0 files" }).waitFor();
      await expect(page.locator("#diff").count()).resolves.toBe(0);
      await expect(page.locator("#artifacts").textContent()).resolves.toContain("changes.diff");

      // Retry of a failed attempt 3 that had made a diff.
      await putInState(s, id, "running", { attempt: 3 });
      await storeArtifact(s.core, w.owner.orgId, id, "changes.diff", diff("export const third = 3;"), 3);
      await putInState(s, id, "failed", { attempt: 3 });
      await page.locator("#diff", { hasText: "export const third = 3;" }).waitFor();
      await button(page, "Retry").click();
      await page.locator("#task-status", { hasText: /^queued/ }).waitFor();
      await page.locator("#changes").waitFor({ state: "detached" });
      expect(await posted(page)).toEqual(["restart", "retry"]);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("d on a budget question asks first (denying cancels the task); on a tool's question it denies at once", async () => {
    const budget = await task("Expensive refactor");
    await putInState(s, budget, "needs_approval", { worker_id: null, needs: JSON.stringify({ kind: "budget", message: "over budget: $5.00 of $5.00; continue?" }) });
    const tool = await task("Push it");
    await putInState(s, tool, "needs_approval", { worker_id: null });
    await usePage(browser, async ({ page, problems }) => {
      await open(page, budget);
      await page.locator("#task-needs-message", { hasText: "over budget" }).waitFor();
      await page.keyboard.press("d");
      const asked = question(page, /^Deny more budget\? That cancels the task\.$/);
      await asked.waitFor();
      expect(await posted(page)).toEqual([]);
      await asked.getByRole("button", { name: "Go back" }).click();
      await button(page, "Deny").click();
      await asked.getByRole("button", { name: "Yes, deny and cancel" }).click();
      await page.locator("#task-status", { hasText: /^cancelled( \(attempt \d+\))?$/ }).waitFor();
      expect(await statusOf(budget)).toBe("cancelled");
      expect(await posted(page)).toEqual(["deny"]);

      await page.goto(`${s.url}/tasks/${tool}`);
      await page.locator("#task-needs-message", { hasText: "Push to main?" }).waitFor();
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await page.keyboard.press("d");
      await page.locator("#task-status", { hasText: /^running/ }).waitFor();
      expect(await statusOf(tool)).toBe("running");
      expect(await posted(page)).toEqual(["deny"]);
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
