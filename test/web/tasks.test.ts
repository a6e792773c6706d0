// The tasks list "/tasks" (SPEC §5, §6, §11): an organization's tasks newest first with filters
// kept in the address and Load more, kept current over the socket; another organization's tasks
// never show; server text is text. The New task form: tasks-new.test.ts.
import { expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { makeProject, makeTask, putInState, type World } from "../tasks/fixtures";
import { tasksKit } from "./tasks-fixtures";
import { describeBrowser, holdAnswers, trackSockets, screenshot, shownText, usePage, worldSuite } from "./browser";

const XSS = "<img src=x onerror=alert(1)>";

describeBrowser("web: tasks list", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));
  const { freshOrg, listed, openList, rowsAre, openForm } = tasksKit(() => ({ s, w }));

  const rowIds = (page: Page) => page.locator("#tasks-rows tr").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-id")));
  const titles = (page: Page) => page.locator("#tasks-rows td.title").allTextContents();
  /** Waits until no first page is being fetched (the rows say aria-busy meanwhile). */
  const idle = (page: Page) => page.locator("#tasks-rows:not([aria-busy])").waitFor({ state: "attached" });
  const address = (page: Page) => new URL(page.url()).searchParams;
  let filter: (label: string) => ReturnType<Page["getByLabel"]>;

  test("/tasks is a page of its own (the task page stays at /tasks/:id), with the security headers, not in the OpenAPI document", async () => {
    const res = await fetch(`${s.url}/tasks`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    // The app's one HTML shell: its router shows the list or the task page.
    expect(await res.text()).toContain('<script type="module" src="/assets/app.js"></script>');
    expect(await (await fetch(`${s.url}/tasks/tsk_x`)).text()).toContain('src="/assets/app.js"');
    const doc = (await s.api("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/tasks"))).toEqual([]);
  });

  test("Load more pages through 62 tasks newest first, without duplicates or gaps; filters go into the address and survive a reload", async () => {
    const { org, as, projects } = await freshOrg(["shop", "docs"]);
    for (let i = 0; i < 62; i++) {
      const extra = i % 5 === 0 ? { kind: "review", review: { base: "main", head: `fix-${i}` } } : {};
      await makeTask(s, as, projects[i % 2 === 0 ? 0 : 1]!.id, { title: `Task ${i}`, ...extra });
    }
    const all = await listed(as);
    await putInState(s, all[3]!.id, "running");
    await putInState(s, all[8]!.id, "running");
    await usePage(browser, async ({ page, problems }) => {
      filter = (label) => page.locator("#tasks-filters").getByLabel(label);
      await openList(page, `?org=${org.id}`);
      await rowsAre(page, all.slice(0, 50).map((t) => t.id));
      await page.getByRole("button", { name: "Load more" }).click();
      await rowsAre(page, all.map((t) => t.id));
      await expect(page.getByRole("button", { name: "Load more" }).isHidden()).resolves.toBe(true);
      const first = page.locator("#tasks-rows tr").first();
      expect((await first.locator("td").allTextContents()).slice(0, 6)).toEqual(["Task 61", "queued", "docs", "task", "MEDIUM", "—"]);
      await expect(first.getByRole("link").getAttribute("href")).resolves.toBe(`/tasks/${all[0]!.id}`);
      // Times read "just now", the exact time on hover.
      await expect(first.locator("time").textContent()).resolves.toBe("just now");
      await expect(first.locator("time").getAttribute("title")).resolves.toMatch(/\d{4}/);

      await filter("Status").selectOption("running");
      await rowsAre(page, [all[3]!.id, all[8]!.id]);
      expect(address(page).get("status")).toBe("running");
      await filter("Status").selectOption("");
      await filter("Project").selectOption({ label: "shop" });
      await filter("Kind").selectOption("review");
      const shopReviews = all.filter((t) => t.kind === "review" && t.projectId === projects[0]!.id).map((t) => t.id);
      expect(shopReviews).toHaveLength(7);
      await rowsAre(page, shopReviews);
      expect([address(page).get("org"), address(page).get("projectId"), address(page).get("kind"), address(page).get("status")]).toEqual([org.id, projects[0]!.id, "review", null]);
      await page.reload();
      await rowsAre(page, shopReviews);
      await expect(filter("Kind").inputValue()).resolves.toBe("review");
      await filter("Status").selectOption("failed");
      await expect(shownText(page, "#tasks-empty")).resolves.toBe("No task matches these filters. Choose “any” to see more.");

      await screenshot(page, "tasks-filtered");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("live: a new task appears at the top, a status change updates its row, a row that stops matching the filter goes", async () => {
    const { org, as, projects } = await freshOrg(["live"]);
    const older = await makeTask(s, as, projects[0]!.id, { title: "Older" });
    await usePage(browser, async ({ page, problems }) => {
      filter = (label) => page.locator("#tasks-filters").getByLabel(label);
      await openList(page, `?org=${org.id}&status=queued`);
      await rowsAre(page, [older.id]);
      const fresh = await makeTask(s, as, projects[0]!.id, { title: "Arrived live" });
      await rowsAre(page, [fresh.id, older.id]);
      await expect(titles(page)).resolves.toEqual(["Arrived live", "Older"]);
      await putInState(s, older.id, "cancelled");
      await rowsAre(page, [fresh.id]);

      await filter("Status").selectOption("");
      await rowsAre(page, [fresh.id, older.id]);
      // Queued with no worker online: its status cell says why on hover; running, it says nothing.
      const status = page.locator(`#tasks-rows tr[data-id='${fresh.id}'] td:has(.status)`);
      await expect(status.getAttribute("title")).resolves.toBe("Waiting: no approved worker of the organization is online");
      await putInState(s, fresh.id, "running");
      await page.locator(`#tasks-rows tr[data-id='${fresh.id}'] .status`, { hasText: /^running$/ }).waitFor();
      // (Preact empties the attribute rather than removing it: no tooltip either way.)
      expect((await status.getAttribute("title")) ?? "").toBe("");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("after the socket drops, it reconnects and fetches the first page again (what was made meanwhile shows)", async () => {
    const { org, as, projects } = await freshOrg(["flaky"]);
    const before = await makeTask(s, as, projects[0]!.id, { title: "Before" });
    await usePage(browser, async ({ page, problems }) => {
      await trackSockets(page);
      await openList(page, `?org=${org.id}`);
      await rowsAre(page, [before.id]);
      await page.evaluate("window.__sockets.at(-1).close()");
      await page.locator("#live-state", { hasText: "reconnecting…" }).waitFor();
      const meanwhile = await makeTask(s, as, projects[0]!.id, { title: "While away" });
      await rowsAre(page, [meanwhile.id, before.id]);
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await expect(page.evaluate("window.__sockets.length")).resolves.toBe(2);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a task made while the first page is being fetched again stays shown when that older answer arrives", async () => {
    const { org, as, projects } = await freshOrg(["race"]);
    const before = await makeTask(s, as, projects[0]!.id, { title: "Before" });
    await usePage(browser, async ({ page, problems }) => {
      await trackSockets(page);
      await holdAnswers(page);
      await openList(page, `?org=${org.id}`);
      await rowsAre(page, [before.id]);
      await idle(page);
      // The answer to the first page asked after the next subscription is held in the page until
      // the task below is made and its update has arrived over the socket.
      await page.evaluate(`window.__hold = "/tasks?limit="`);
      await page.evaluate("window.__sockets.at(-1).close()");
      await page.waitForFunction(() => (globalThis as any).__held.length === 1);
      const during = await makeTask(s, as, projects[0]!.id, { title: "During the fetch" });
      await rowsAre(page, [during.id, before.id]);
      await page.evaluate("window.__hold = null; window.__held.shift()()");
      await idle(page);
      await expect(rowIds(page)).resolves.toEqual([during.id, before.id]);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a task changed while Load more is being answered shows its change when that page arrives", async () => {
    const { org, as, projects } = await freshOrg(["more"]);
    for (let i = 0; i < 52; i++) await makeTask(s, as, projects[0]!.id, { title: `Task ${i}` });
    const all = await listed(as);
    await usePage(browser, async ({ page, problems }) => {
      await trackSockets(page);
      await holdAnswers(page);
      await openList(page, `?org=${org.id}`);
      await rowsAre(page, all.slice(0, 50).map((t) => t.id));
      await idle(page);
      await page.evaluate(`window.__hold = "cursor="`);
      await page.getByRole("button", { name: "Load more" }).click();
      await page.waitForFunction(() => (globalThis as any).__held.length === 1);
      // The task is on the page being answered, not yet shown: its update has no row to change.
      const changed = all[51]!.id;
      await page.evaluate(`window.__sockets.at(-1).addEventListener("message", (e) => { if (e.data.includes(${JSON.stringify(changed)}) && e.data.includes('"running"')) window.__arrived = true; })`);
      await putInState(s, changed, "running");
      // This listener runs after the page's own: the page has had the update.
      await page.waitForFunction(() => (globalThis as any).__arrived === true);
      await page.evaluate("window.__hold = null; window.__held.shift()()");
      await rowsAre(page, all.map((t) => t.id));
      await expect(page.locator(`#tasks-rows tr[data-id='${changed}'] .status`).textContent()).resolves.toBe("running");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a project made after the page loaded: its tasks name it (list and board), the filter and the New task form offer it, after one more reading of the projects", async () => {
    const { org, as } = await freshOrg(["first"]);
    /** How many times the page has read the projects (its own Resource Timing entries). */
    const projectReads = (page: Page) => page.evaluate(() => (globalThis as any).performance.getEntriesByType("resource").filter((e: { name: string }) => e.name.includes("/projects?")).length);
    await usePage(browser, async ({ page, problems }) => {
      await openList(page, `?org=${org.id}`);
      await page.locator("#tasks-empty").waitFor();
      await expect(projectReads(page)).resolves.toBe(1);
      const later = await makeProject(s, as, "later");
      const t = await makeTask(s, as, later.id, { title: "In the later project" });
      await page.locator(`#tasks-rows tr[data-id='${t.id}'] td.project`, { hasText: /^later$/ }).waitFor();
      await expect(projectReads(page)).resolves.toBe(2);
      await page.locator("#filter-project option", { hasText: /^later$/ }).waitFor({ state: "attached" });
      await openForm(page);
      await page.locator("#new-task").getByLabel("Project").locator("option", { hasText: /^later$/ }).waitFor({ state: "attached" });
      // A second task of the same project reads nothing more.
      const again = await makeTask(s, as, later.id, { title: "Again" });
      await page.locator(`#tasks-rows tr[data-id='${again.id}'] td.project`, { hasText: /^later$/ }).waitFor();
      await expect(projectReads(page)).resolves.toBe(2);

      // The board names a project made while it is shown too.
      await page.getByRole("group", { name: "View" }).getByRole("link", { name: "Board" }).click();
      await page.locator("#board").waitFor();
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      const latest = await makeProject(s, as, "latest");
      const card = await makeTask(s, as, latest.id, { title: "On the board" });
      await page.locator(`#board .task-card[data-id='${card.id}'] .badge`, { hasText: /^latest$/ }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("two organizations: the picker switches lists; another person's organization shows the API's refusal and none of its data", async () => {
    const person = await newOrg(s, "first-org");
    const first = { orgId: person.orgId, accessToken: person.accessToken };
    const second = await freshOrg(["second-project"], person);
    const p1 = await makeProject(s, first, "first-project");
    const a = await makeTask(s, first, p1.id, { title: "In the first" });
    const b = await makeTask(s, second.as, second.projects[0]!.id, { title: "In the second" });
    await makeTask(s, w.other, w.otherProject.id, { title: "Their secret" });
    await usePage(browser, async ({ page, problems }) => {
      await openList(page, "", person);
      // The newest organization comes first in the person's list.
      await rowsAre(page, [b.id]);
      expect(address(page).get("org")).toBe(second.org.id);
      await page.getByLabel("Organization", { exact: true }).selectOption({ label: "first-org" });
      await rowsAre(page, [a.id]);
      expect(address(page).get("org")).toBe(person.orgId);
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await makeTask(s, second.as, second.projects[0]!.id, { title: "Second again" });
      await makeTask(s, first, p1.id, { title: "First again" });
      await expect(page.locator("#tasks-rows td.title", { hasText: "First again" }).waitFor()).resolves.toBeUndefined();
      await expect(titles(page)).resolves.toEqual(["First again", "In the first"]);

      await page.goto(`${s.url}/tasks?org=${w.other.orgId}`);
      await expect(shownText(page, "#tasks-error")).resolves.toBe("Organization not found.");
      await expect(page.locator("#tasks-body").isHidden()).resolves.toBe(true);
      await expect(page.locator("#new-task").isHidden()).resolves.toBe(true);
      await makeTask(s, w.other, w.otherProject.id, { title: "Their second secret" });
      expect((await page.locator("main").textContent()) ?? "").not.toContain("secret");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("markup in a title is shown as text; the home page links to the lists", async () => {
    const { org, as, projects } = await freshOrg(["xss"]);
    const t = await makeTask(s, as, projects[0]!.id, { title: XSS });
    await usePage(browser, async ({ page, problems }) => {
      const dialogs: string[] = [];
      page.on("dialog", (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await openList(page, `?org=${org.id}`);
      await rowsAre(page, [t.id]);
      await expect(titles(page)).resolves.toEqual([XSS]);
      await makeTask(s, as, projects[0]!.id, { title: `live ${XSS}` });
      await page.locator("#tasks-rows td.title", { hasText: `live ${XSS}` }).waitFor();
      await expect(page.locator("main img").count()).resolves.toBe(0);
      expect(await rowIds(page)).toHaveLength(2);

      await page.goto(s.url);
      await page.getByRole("heading", { name: /^Welcome/ }).waitFor();
      await expect(page.getByRole("link", { name: "Tasks", exact: true }).getAttribute("href")).resolves.toBe("/tasks");
      await expect(page.locator("#home-orgs a").evaluateAll((as) => as.map((a) => a.getAttribute("href")))).resolves.toContain(`/tasks?org=${org.id}`);
      expect(dialogs).toEqual([]);
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
