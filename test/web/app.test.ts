// The app around the pages (SPEC §11, issue 11): the sidebar and its waiting count, client-side
// moves between pages, the board moving cards live, the task page's transcript and diff, every
// page free of console errors and CSP violations, the phone layout, and the README's screenshots.
import { expect, test } from "bun:test";
import type { Browser, Page, Route } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { makeProject, makeTask, putInState, type World } from "../tasks/fixtures";
import { changeTask } from "../../src/modules/tasks/store";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { get } from "../../src/db/query";
import { DESKTOP, PHONE, describeBrowser, docsScreenshot, openSignedIn, overflowsSideways, shownText, usePage, worldSuite } from "./browser";

const PASSWORD = "correct horse battery staple";
const XSS = "<img src=x onerror=alert(1)>";

/** A diff of two files, one with markup in its name and a hunk header that carries markup too. */
const DIFF = [
  "diff --git a/src/cart.ts b/src/cart.ts",
  "index 1111111..2222222 100644",
  "--- a/src/cart.ts",
  "+++ b/src/cart.ts",
  `@@ -1,3 +1,3 @@ function ${XSS}`,
  " export function total(items) {",
  "-  return items.length;",
  "+  return items.reduce((sum, i) => sum + i.price, 0);",
  " }",
  `diff --git a/${XSS}.md b/${XSS}.md`,
  "new file mode 100644",
  "--- /dev/null",
  `+++ b/${XSS}.md`,
  "@@ -0,0 +1 @@",
  "+# notes",
  "",
].join("\n");

describeBrowser("web: the app", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  const task = (title: string, extra: Record<string, unknown> = {}) => makeTask(s, w.owner, w.project.id, { title, ...extra }) as Promise<{ id: string; title: string }>;
  const events = (id: string, list: { type: string; data: unknown }[]) => changeTask(s.core, null, id, () => ({ events: list }));
  const signIn = (page: Page, path: string) => openSignedIn(page, `${s.url}${path}`, w.owner.email, PASSWORD);
  /** The cards' task ids of a board column. */
  const column = (page: Page, status: string) => page.locator(`.column[data-status='${status}'] .task-card`).evaluateAll((cs) => cs.map((c) => c.getAttribute("data-id")));

  /** A task with a session worth reading: every kind of event, colour, and a diff. */
  async function richTask(make: (title: string, extra: Record<string, unknown>) => Promise<{ id: string }> = task, orgId = w.owner.orgId) {
    const t = await make("Make the cart total prices", { prompt: "The cart shows the number of items where the total price belongs.\nFix it and add a test." });
    putInState(s, t.id, "running");
    events(t.id, [
      { type: "message", data: { role: "assistant", text: "I'll look at how the cart computes its total first." } },
      { type: "tool", data: { name: "Read", status: "done", input: { path: "src/cart.ts" }, output: "export function total(items) {\n  return items.length;\n}" } },
      { type: "decision", data: { decision: "allow", name: "Bash", subject: "bun test test/cart.test.ts", rule: "shell:bun test*", by: "policy" } },
      { type: "log", data: { line: "\u001b[32m✓\u001b[0m cart > total of an empty cart \u001b[2m[0.41ms]\u001b[0m" } },
      { type: "log", data: { line: "\u001b[31m✗\u001b[0m cart > total of two items \u001b[1mexpected 30, got 2\u001b[0m", stream: "stderr" } },
      { type: "edit", data: { path: "src/cart.ts", additions: 1, deletions: 1, diff: "-  return items.length;\n+  return items.reduce((sum, i) => sum + i.price, 0);" } },
      { type: "decision", data: { decision: "deny", name: "Bash", subject: "git push --force", rule: null, by: "default" } },
      { type: "error", data: { message: "the network call to registry.example was refused by the policy" } },
      { type: "message", data: { role: "assistant", text: "The total now sums the prices; the test passes." } },
    ]);
    await storeArtifact(s.core, orgId, t.id, "changes.diff", new TextEncoder().encode(orgId === w.owner.orgId ? DIFF : DIFF.split(`diff --git a/${XSS}`)[0]!.replace(`function ${XSS}`, "export function total(items) {")), 1);
    return t;
  }

  test("the sidebar links every page; moving between them loads no page; the waiting count follows the socket", async () => {
    const a = await task("Asks something");
    const b = await task("Asks approval");
    await usePage(browser, async ({ page, problems }) => {
      await signIn(page, "/tasks");
      const links = await page.locator("#sidebar nav a").evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href")]));
      expect(links).toEqual([
        ["Tasks", "/tasks"],
        ["Board", "/tasks?view=board"],
        ["Projects", "/projects"],
        ["Workers", "/workers"],
        ["Integrations", "/integrations"],
        ["GitHub", "/github"],
        ["Settings", "/settings"],
        ["Admin", "/admin"],
      ]);
      // The picker fills once the person's organizations are in (their own request, which can answer last).
      await page.locator("#org-switch option").first().waitFor({ state: "attached" });
      await expect(page.locator("#org-switch option").allTextContents()).resolves.toEqual(["admin-org"]);
      await expect(page.locator("#waiting-count").count()).resolves.toBe(0);
      // The org's subscription is answered (a change made before it would reach no socket).
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      putInState(s, a.id, "needs_input");
      await page.locator("#waiting-count", { hasText: /^1$/ }).waitFor();
      putInState(s, b.id, "needs_approval");
      await page.locator("#waiting-count", { hasText: /^2$/ }).waitFor();
      await expect(page.locator("#waiting-count").getAttribute("title")).resolves.toBe("2 tasks waiting for a person");
      putInState(s, a.id, "running");
      await page.locator("#waiting-count", { hasText: /^1$/ }).waitFor();

      // A marker in the page survives the moves: no page was loaded.
      await page.evaluate("window.__stayed = true");
      await page.locator("#sidebar").getByRole("link", { name: "Board" }).click();
      await page.locator("#board").waitFor();
      await page.locator("#sidebar").getByRole("link", { name: "Projects" }).click();
      await page.getByRole("heading", { name: "Projects" }).waitFor();
      expect(new URL(page.url()).pathname).toBe("/projects");
      await page.locator("#who-name").click();
      await page.locator("#sidebar").getByRole("link", { name: "Account" }).click();
      await page.getByRole("heading", { name: "Account" }).waitFor();
      await page.goBack();
      await page.getByRole("heading", { name: "Projects" }).waitFor();
      await expect(page.evaluate("window.__stayed")).resolves.toBe(true);
      // The waiting count still follows (one socket for the whole tab).
      putInState(s, a.id, "needs_input");
      await page.locator("#waiting-count", { hasText: /^2$/ }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a change the socket brings while the waiting count is being read is counted", async () => {
    const c = await task("Asks while the count is read");
    await usePage(browser, async ({ page, problems }) => {
      // The page hears the change over its socket.
      let heard!: () => void;
      const changeHeard = new Promise<void>((resolve) => (heard = resolve));
      page.on("websocket", (ws) =>
        ws.on("framereceived", (f) => {
          const m = JSON.parse(String(f.payload));
          if (m.type === "task.updated" && m.task?.id === c.id && m.task.status === "needs_input") heard();
        }),
      );
      // The count's first read is held, and answered with what the server said before the change.
      let holdFirst: ((r: Route) => void) | null = null;
      const held = new Promise<Route>((resolve) => (holdFirst = resolve));
      await page.route(/\/tasks\?status=needs_input&limit=200$/, (route) => {
        const hold = holdFirst;
        holdFirst = null;
        if (hold) hold(route);
        else void route.continue();
      });
      await signIn(page, "/tasks");
      const route = await held;
      const before = await route.fetch();
      putInState(s, c.id, "needs_input");
      await changeHeard;
      await route.fulfill({ response: before });
      const { n: expected } = (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM tasks WHERE org_id = ? AND status IN ('needs_input', 'needs_approval')", w.owner.orgId)))!;
      await page.locator("#waiting-count", { hasText: new RegExp(`^${expected}$`) }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("the board: a column per status; cards move live when a task changes, new ones arrive live", async () => {
    const { id: orgId } = { id: w.owner.orgId };
    const t = await task("Moves across the board");
    await usePage(browser, async ({ page, problems }) => {
      await signIn(page, `/tasks?org=${orgId}&view=board`);
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await expect(page.locator(".column h2").allTextContents()).resolves.toEqual(["Queued", "Running", "Paused", "Needs input", "Needs approval", "Completed", "Failed", "Cancelled"]);
      await page.locator(`.column[data-status='queued'] .task-card[data-id='${t.id}']`).waitFor();
      putInState(s, t.id, "running");
      await page.locator(`.column[data-status='running'] .task-card[data-id='${t.id}']`).waitFor();
      expect(await column(page, "queued")).not.toContain(t.id);
      putInState(s, t.id, "needs_approval");
      await page.locator(`.column[data-status='needs_approval'] .task-card[data-id='${t.id}']`).waitFor();
      await expect(page.locator(`.task-card[data-id='${t.id}'] .card-needs`).textContent()).resolves.toBe("Push to main?");
      expect(await column(page, "running")).not.toContain(t.id);
      const fresh = await task(`Arrives live ${XSS}`);
      await page.locator(`.column[data-status='queued'] .task-card[data-id='${fresh.id}']`).waitFor();
      await expect(page.locator(`.task-card[data-id='${fresh.id}'] .card-title`).textContent()).resolves.toBe(`Arrives live ${XSS}`);
      // No worker is online here: the queued card says so (the reason came with the live record).
      await expect(page.locator(`.task-card[data-id='${fresh.id}'] .card-waiting`).textContent()).resolves.toBe("no approved worker of the organization is online");
      await expect(page.locator("#board img").count()).resolves.toBe(0);
      // The board's filter by project stays in the address.
      await page.locator("#tasks-filters").getByLabel("Project").selectOption({ index: 1 });
      expect(new URL(page.url()).searchParams.get("view")).toBe("board");
      expect(new URL(page.url()).searchParams.get("projectId")).toBe(w.project.id);
      await page.waitForURL((u) => u.searchParams.get("projectId") === w.project.id);
      await page.locator(`.column[data-status='needs_approval'] .task-card[data-id='${t.id}']`).waitFor();
      expect(problems).toEqual([]);
    }, DESKTOP);
  }, 90_000);

  test("the task page's session: messages, tools, edits, decisions, errors and coloured log lines, readable and as text", async () => {
    const t = await richTask();
    await usePage(browser, async ({ page, problems }) => {
      const dialogs: string[] = [];
      page.on("dialog", (d) => void (dialogs.push(d.message()), d.dismiss()));
      await signIn(page, `/tasks/${t.id}`);
      await page.locator("#timeline li[data-type=error]").waitFor();
      await expect(page.locator("#timeline li").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-type")))).resolves.toEqual([
        "status", "status", "message", "tool", "decision", "log", "log", "edit", "decision", "error", "message", "artifact",
      ]);
      await expect(page.locator("#timeline li.message .bubble").first().textContent()).resolves.toBe("I'll look at how the cart computes its total first.");
      await expect(page.locator("#timeline li.tool summary").textContent()).resolves.toContain('Read done { "path": "src/cart.ts" }');
      // A tool call unfolds to its input and output.
      await page.locator("#timeline li.tool summary").click();
      await expect(page.locator("#timeline li.tool pre.output").textContent()).resolves.toBe("export function total(items) {\n  return items.length;\n}");
      await expect(page.locator("#timeline li.decision-deny").textContent()).resolves.toContain("deny Bash git push --force (built-in rules)");
      await expect(page.locator("#timeline li.decision-allow").textContent()).resolves.toContain("(rule shell:bun test*)");
      await expect(page.locator("#timeline li.edit .text").textContent()).resolves.toBe("src/cart.ts +1 −1");
      await expect(page.locator("#timeline li.log .fg-ansi-red").textContent()).resolves.toBe("✗");
      await expect(page.locator("#timeline li.log .ansi-bold").textContent()).resolves.toBe("expected 30, got 2");
      await expect(page.locator("#timeline").textContent()).resolves.not.toContain("\u001b");

      // The diff, by diff2html, with markup from the diff shown as text and nothing run.
      await page.locator("#diff .d2h-file-wrapper").first().waitFor();
      await expect(page.locator("#diff .d2h-file-wrapper").count()).resolves.toBe(2);
      await expect(page.locator("#diff").textContent()).resolves.toContain("return items.reduce((sum, i) => sum + i.price, 0);");
      await expect(page.locator("#diff .d2h-ins").count()).resolves.toBeGreaterThan(0);
      await expect(page.locator("#diff").textContent()).resolves.toContain(`${XSS}.md`);
      await expect(page.locator("#diff img, #diff script, #diff [onerror], #diff [style]").count()).resolves.toBe(0);
      expect(dialogs).toEqual([]);
      expect(problems).toEqual([]);
    }, DESKTOP);
  }, 90_000);

  test("a long session shows its last 300 entries, earlier ones on demand, and stays live", async () => {
    const t = await task("Chatty");
    events(t.id, Array.from({ length: 700 }, (_, i) => ({ type: "log", data: { line: `line ${i}` } })));
    await usePage(browser, async ({ page, problems }) => {
      await signIn(page, `/tasks/${t.id}`);
      await page.locator("#timeline li", { hasText: "line 699" }).waitFor();
      await expect(page.locator("#timeline li").count()).resolves.toBe(300);
      await expect(page.locator("#timeline li").first().getAttribute("data-seq")).resolves.toBe("402");
      await page.locator("#timeline-earlier").click();
      await expect(page.locator("#timeline li").count()).resolves.toBe(600);
      events(t.id, [{ type: "log", data: { line: "one more" } }]);
      await page.locator("#timeline li", { hasText: "one more" }).waitFor();
      await expect(page.locator("#timeline li").last().getAttribute("data-seq")).resolves.toBe("702");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("every page: no console error and no CSP violation, on a desktop and on a phone, where nothing sticks out sideways", async () => {
    const t = await richTask();
    const pages = ["/", "/tasks", "/tasks?view=board", `/tasks/${t.id}`, "/projects", `/projects/${w.project.id}`, "/workers", "/integrations", "/github", "/settings", "/account", "/admin", "/device", "/pair", "/setup"];
    for (const viewport of [DESKTOP, PHONE]) {
      await usePage(
        browser,
        async ({ page, problems }) => {
          await signIn(page, "/tasks");
          for (const path of pages) {
            await page.goto(`${s.url}${path}`);
            // Each page shows its own heading once it has what it needs.
            await page.locator("h1").first().waitFor();
            await page.locator("[aria-busy=true]").first().waitFor({ state: "detached" });
            expect([path, await overflowsSideways(page)]).toEqual([path, false]);
          }
          expect(problems).toEqual([]);
        },
        viewport,
      );
    }
  }, 150_000);

  test("on a phone the sidebar folds behind the menu button; the list keeps one line per date", async () => {
    await task("A title long enough to need more than one line on a narrow phone screen, surely");
    await usePage(
      browser,
      async ({ page, problems }) => {
        await signIn(page, "/tasks");
        await page.locator("#tasks-rows tr").first().waitFor();
        await expect(page.locator("#sidebar").isVisible()).resolves.toBe(true); // in the page, moved out of view
        await expect(page.locator("#sidebar").evaluate((e) => e.getBoundingClientRect().right <= 0)).resolves.toBe(true);
        await page.getByRole("button", { name: "Menu" }).click();
        await page.waitForFunction(() => (globalThis as any).document.getElementById("sidebar").getBoundingClientRect().left >= 0);
        await page.locator("#sidebar").getByRole("link", { name: "Board" }).click();
        await page.locator("#board").waitFor();
        await page.waitForFunction(() => (globalThis as any).document.getElementById("sidebar").getBoundingClientRect().right <= 0);
        await page.locator("#sidebar").getByRole("link", { name: "Tasks" }).evaluate((a) => (a as any).click());
        await page.locator("#tasks-rows time").first().waitFor();
        const lines = await page.locator("#tasks-rows time").evaluateAll((ts) => ts.map((t) => Math.round(t.getBoundingClientRect().height / parseFloat((globalThis as any).getComputedStyle(t).lineHeight))));
        expect(new Set(lines)).toEqual(new Set([1]));
        expect(await overflowsSideways(page)).toBe(false);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, 90_000);

  test("on a phone the top bar keeps its height on a page shorter than the screen; the page starts right below it", async () => {
    await usePage(
      browser,
      async ({ page, problems }) => {
        await signIn(page, "/");
        await page.locator("#home-title").waitFor();
        const measured = await page.evaluate(() => {
          const doc = (globalThis as any).document;
          const bar = doc.querySelector(".topbar").getBoundingClientRect();
          const main = doc.getElementById("main").getBoundingClientRect();
          const h1 = doc.querySelector("main h1").getBoundingClientRect();
          return { short: doc.documentElement.scrollHeight <= (globalThis as any).innerHeight, bar: bar.height, below: main.top - bar.bottom, heading: h1.top - main.top };
        });
        expect(measured.short).toBe(true);
        // One line: the menu button (2.2rem) and the bar's padding.
        expect(measured.bar).toBeLessThan(60);
        expect(Math.abs(measured.below)).toBeLessThan(1);
        expect(measured.heading).toBeLessThan(20);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, 90_000);

  test("the README's screenshots: the tasks list, the board and a task's session (light theme, 1280x800)", async () => {
    // An organization of its own, so that the pictures show only what they are meant to.
    const org = (await s.api("POST", "/orgs", { token: w.owner.accessToken, body: { name: "acme" } })).body as { id: string };
    const as = { orgId: org.id, accessToken: w.owner.accessToken };
    // shop has a repository: its review needs one.
    const [shop, docs] = [await makeProject(s, as, "shop", { repositories: [{ url: "https://example.com/acme/shop.git" }] }), await makeProject(s, as, "docs")];
    const make = (project: { id: string }) => (title: string, extra: Record<string, unknown> = {}) => makeTask(s, as, project.id, { title, ...extra }) as Promise<{ id: string }>;
    const early = [await make(docs)("Document the backup and restore steps"), await make(shop)("Show prices with the currency of the shop")];
    putInState(s, early[0]!.id, "completed");
    putInState(s, early[1]!.id, "cancelled");
    const t = await richTask(make(shop), org.id);
    const more = [
      await make(shop)("Add a dark theme to the settings page", { priority: "HIGH" }),
      await make(shop)("Review the payment retries", { kind: "review", review: { base: "main", head: "retry-payments" } }),
      await make(docs)("Plan the move to PostgreSQL", { kind: "plan" }),
      await make(shop)("Bump the dependencies", { priority: "LOW" }),
      await make(docs)("Explain the worker labels in the README", { priority: "URGENT" }),
    ];
    putInState(s, more[4]!.id, "needs_input");
    putInState(s, more[0]!.id, "needs_approval");
    putInState(s, more[1]!.id, "completed");
    putInState(s, more[3]!.id, "failed");
    await usePage(
      browser,
      async ({ page, problems }) => {
        await page.emulateMedia({ colorScheme: "light" });
        await signIn(page, `/tasks?org=${org.id}`);
        await page.locator(`#tasks-rows tr[data-id='${more[4]!.id}']`).waitFor();
        await page.locator("#waiting-count", { hasText: /^2$/ }).waitFor();
        await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
        await docsScreenshot(page, "tasks");
        await page.locator("#sidebar").getByRole("link", { name: "Board" }).click();
        await page.locator(`.column[data-status='failed'] .task-card[data-id='${more[3]!.id}']`).waitFor();
        await docsScreenshot(page, "board");
        await page.goto(`${s.url}/tasks/${t.id}`);
        await page.locator("#diff .d2h-file-wrapper").first().waitFor();
        await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
        await docsScreenshot(page, "task");
        await expect(shownText(page, "#task-status")).resolves.toBe("running (attempt 1)");
        expect(problems).toEqual([]);
      },
      DESKTOP,
    );
  }, 90_000);
});
