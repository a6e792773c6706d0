// The task page's plan card (SPEC §5, §11): the tasks a plan proposes, Apply plan, and the tasks
// it made, which change live and are read again after a reconnect without losing what the socket
// brought meanwhile.
import { expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { makeTask, putInState, type World } from "../tasks/fixtures";
import { run } from "../../src/db/query";
import { describeBrowser, holdAnswers, openTaskPage, screenshot, trackSockets, usePage, worldSuite } from "./browser";

const PASSWORD = "correct horse battery staple";
const PLAN = { tasks: [{ title: "Add the schema", prompt: "Create the table." }, { title: "Write the API", prompt: "Routes.", priority: "HIGH" }] };

describeBrowser("web: a plan on the task page", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  const task = (extra: Record<string, unknown> = {}) => makeTask(s, w.owner, w.project.id, extra) as Promise<{ id: string; title: string }>;

  /** Opens the task's page, signs in as `who`, and waits until the task shows and is live. */
  const openTask = (page: Page, id: string, who = w.owner, title?: string) => openTaskPage(page, `${s.url}/tasks/${id}`, who, PASSWORD, title);

  test("a completed plan: Apply plan creates its tasks and links to them", async () => {
    const t = await task({ title: "Plan the shop", kind: "plan" });
    await putInState(s, t.id, "completed", { plan: JSON.stringify(PLAN) });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.member, "Plan the shop");
      await expect(page.locator("#plan-tasks li strong").allTextContents()).resolves.toEqual(["Add the schema", "Write the API"]);
      await page.getByRole("button", { name: "Apply plan" }).click();
      await page.locator("#plan-children a").first().waitFor();
      const children = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks?parentId=${t.id}`, { token: w.owner.accessToken })).body.items as { id: string; title: string }[];
      expect(children.map((c) => c.title).sort()).toEqual(["Add the schema", "Write the API"]);
      const links = await page.locator("#plan-children a").evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href")]));
      expect(links).toEqual(["Add the schema", "Write the API"].map((title) => [title, `/tasks/${children.find((c) => c.title === title)!.id}`]));
      await expect(page.getByRole("button", { name: "Apply plan" }).isHidden()).resolves.toBe(true);
      await page.locator("#timeline li", { hasText: `plan applied by ${w.member.email}: 2 tasks created (` }).waitFor();
      await screenshot(page, "task-plan");
      // A task it made changes: its status shows at once.
      const schema = children.find((c) => c.title === "Add the schema")!;
      expect((await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${schema.id}/actions`, { token: w.owner.accessToken, body: { action: "cancel" } })).status).toBe(200);
      await page.locator("#plan-children li", { hasText: "Add the schema" }).locator(".status", { hasText: "cancelled" }).waitFor();

      // A child's page links back to the plan.
      await page.getByRole("link", { name: "Write the API" }).click();
      await page.getByRole("heading", { name: "Write the API" }).waitFor();
      await expect(page.locator("#task-facts").getByRole("link", { name: "the plan" }).getAttribute("href")).resolves.toBe(`/tasks/${t.id}`);
      await page.goBack();
      await page.getByRole("heading", { name: "Plan the shop" }).waitFor();
      await page.locator("#plan-children a").first().waitFor();
      await expect(page.getByRole("button", { name: "Apply plan" }).isHidden()).resolves.toBe(true);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a plan that completes while its page is open: what it proposes and Apply plan show live; a viewer sees no Apply plan", async () => {
    const t = await task({ title: "Plan the search", kind: "plan" });
    await putInState(s, t.id, "running");
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.member, "Plan the search");
      await expect(page.locator("#plan-card").count()).resolves.toBe(0);
      const review = { title: "Review the branch", prompt: "Look at it.", kind: "review", review: { base: "main", head: "feature/search" }, agent: "codex" };
      await putInState(s, t.id, "completed", { plan: JSON.stringify({ tasks: [...PLAN.tasks, review] }) });
      await page.getByRole("button", { name: "Apply plan" }).waitFor();
      await expect(page.locator("#plan-tasks li strong").allTextContents()).resolves.toEqual(["Add the schema", "Write the API", "Review the branch"]);
      // What each would be: its priority, kind and, for a review, the range it reviews; the agent it names.
      await expect(page.locator("#plan-tasks li .badge").allTextContents()).resolves.toEqual(["HIGH", "review main → feature/search", "codex"]);
      expect(problems).toEqual([]);
    });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.viewer, "Plan the search");
      await page.locator("#plan-tasks li", { hasText: "Review the branch" }).waitFor();
      await expect(page.locator("#plan-apply").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a plan applied elsewhere (the command line, another tab): its tasks show live and Apply plan goes, without a reload", async () => {
    const t = await task({ title: "Plan the checkout", kind: "plan" });
    await putInState(s, t.id, "completed", { plan: JSON.stringify(PLAN) });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.member, "Plan the checkout");
      await page.getByRole("button", { name: "Apply plan" }).waitFor();
      const restart = page.locator("#action-buttons").getByRole("button", { name: "Restart", exact: true });
      await restart.waitFor();
      const applied = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${t.id}/apply-plan`, { token: w.owner.accessToken });
      expect(applied.status).toBe(201);
      await page.locator("#plan-children li", { hasText: "Write the API" }).waitFor();
      await page.getByRole("button", { name: "Apply plan" }).waitFor({ state: "detached" });
      // An applied plan does not run again (the server answers 409): Restart is not offered.
      await restart.waitFor({ state: "detached" });
      await page.locator("#action-withheld", { hasText: "Its tasks were created, so this plan does not run again" }).waitFor();
      await expect(page.locator("#plan-children a").allTextContents()).resolves.toEqual(["Add the schema", "Write the API"]);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("the tasks it made, read again after a reconnect: a change the socket brought while that read was under way stays", async () => {
    const t = await task({ title: "Plan the store", kind: "plan" });
    await putInState(s, t.id, "completed", { plan: JSON.stringify(PLAN) });
    const applied = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${t.id}/apply-plan`, { token: w.owner.accessToken });
    expect(applied.status).toBe(201);
    const child = (title: string) => (applied.body.tasks as { id: string; title: string }[]).find((c) => c.title === title)!;
    await usePage(browser, async ({ page, problems }) => {
      await trackSockets(page);
      await holdAnswers(page);
      await openTask(page, t.id, w.owner, "Plan the store");
      const row = (title: string) => page.locator("#plan-children li", { hasText: title });
      await row("Write the API").waitFor();
      // A rename no socket tells of (written straight into the database): the read after the
      // reconnect carries it, so it shows when that read's answer lands.
      await s.core.store.write(run("UPDATE tasks SET title = ? WHERE id = ?", "Write the API, versioned", child("Write the API").id));
      await page.evaluate(`window.__hold = "parentId="`);
      await page.evaluate("window.__sockets.at(-1).close()");
      await page.waitForFunction(() => (globalThis as any).__held.length === 1);
      // Meanwhile a task it made is cancelled: the socket brings it.
      const cancel = { token: w.owner.accessToken, body: { action: "cancel" } };
      expect((await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${child("Add the schema").id}/actions`, cancel)).status).toBe(200);
      await row("Add the schema").locator(".status", { hasText: "cancelled" }).waitFor();
      // The older answer lands: its rename shows, and the cancellation heard meanwhile stays.
      await page.evaluate("window.__hold = null; window.__held.shift()()");
      await row("Write the API, versioned").waitFor();
      await expect(row("Add the schema").locator(".status").textContent()).resolves.toBe("cancelled");
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
