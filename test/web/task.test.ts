// The task page "/tasks/:taskId" (SPEC §5, §6, §9, §11): the link the callbacks send. It finds
// the task in the person's organizations, shows it, follows it live over the socket (also after
// the socket drops), offers the actions its state allows and artifacts (plans: task-plan.test.ts);
// another org's task is not found; everything from the server is text, never markup.
import { describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { readFileSync } from "node:fs";
import type { TestServer } from "../helpers/server";
import { makeProject, makeTask, putInState, type World } from "../tasks/fixtures";
import { createAdmin, login, makeToken } from "../helpers/identity";
import { changeTask, txChangeTask } from "../../src/modules/tasks/store";
import { get } from "../../src/db/query";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { revokeSession } from "../../src/modules/auth/service";
import { ACTIONS, ACTION_TABLE, allowedActions, TASK_STATUSES } from "../../src/modules/tasks/machine";
import { describeBrowser, openTaskPage, trackSockets, usePage, screenshot, shownText, signInWithForm, titled, webSuite, worldSuite } from "./browser";
import { pagePolicy } from "../../src/modules/web";
import { makeWorker } from "../workers/helpers";

const PASSWORD = "correct horse battery staple";
// A 1x1 transparent PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");
const XSS = "<img src=x onerror=alert(1)>";

/** A log line in the task's timeline, written through the task store as a worker's report is. */
const logLine = (srv: TestServer, id: string, line: string) => changeTask(srv.core, null, id, () => ({ events: [{ type: "log", data: { line } }] }));

describe("web: the task page's action table", () => {
  test("is the server's state machine (SPEC §5): the buttons offer exactly what the server allows", async () => {
    // The page imports the table from src/modules/tasks/machine.ts; this checks what it derives.
    const model = await import("../../src/web/pages/task/model");
    expect([...model.ACTIONS]).toEqual([...ACTIONS]);
    for (const status of TASK_STATUSES) expect(model.allowedActions(status)).toEqual(allowedActions(status));
    for (const action of ACTIONS) expect(model.LABELS[action]).toBeString();
    expect(Object.keys(ACTION_TABLE).sort()).toEqual([...ACTIONS].sort());
  });
});

describeBrowser("web: task page", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  const task = (extra: Record<string, unknown> = {}) => makeTask(s, w.owner, w.project.id, extra) as Promise<{ id: string; title: string }>;
  const statusOf = async (id: string) => (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}`, { token: w.owner.accessToken })).body.status;
  const log = (id: string, line: string) => logLine(s, id, line);

  /** Opens the task's page, signs in as `who`, and waits until the task shows and is live. */
  const openTask = (page: Page, id: string, who = w.owner, title?: string) => openTaskPage(page, `${s.url}/tasks/${id}`, who, PASSWORD, title);
  const timelineSeqs = (page: Page) => page.locator("#timeline li").evaluateAll((lis) => lis.map((li) => Number(li.getAttribute("data-seq"))));
  const click = (page: Page, name: string) => page.locator("#action-buttons").getByRole("button", { name, exact: true }).click();
  const buttons = (page: Page) => page.locator("#action-buttons button").allTextContents();
  /** The Yes of the question an action that cannot be undone asks first (task-actions.test.ts). */
  const confirm = (page: Page, name: string) => page.locator("#action-confirm").getByRole("button", { name, exact: true }).click();

  test("/tasks/:taskId is the page, with the security headers, and is not in the OpenAPI document", async () => {
    const res = await fetch(`${s.url}/tasks/tsk_anything`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(pagePolicy(s.core.config));
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(await res.text()).toContain('<script type="module" src="/assets/app.js"></script>');
    expect((await fetch(`${s.url}/tasks/${"x".repeat(65)}`)).status).toBe(400);
    const doc = (await s.api("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/tasks"))).toEqual([]);
  });

  test("the callback's link: sign in, see the task; a worker's change arrives live (status and timeline)", async () => {
    const t = await task({ title: "Fix the cart", prompt: "The cart loses items.\nSteps:\n  1. add two\n  2. reload", priority: "HIGH" });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.owner, "Fix the cart");
      await titled(page, "Fix the cart · ao");
      await expect(page.locator("#task-status").textContent()).resolves.toBe("queued");
      await expect(page.locator("#task-status-detail").textContent()).resolves.toBe("Queued just now");
      await expect(page.locator("#task-prompt").textContent()).resolves.toBe("The cart loses items.\nSteps:\n  1. add two\n  2. reload");
      // The project's name comes from its own request, which may answer after the task's.
      const projectName = (w.project as { name?: string }).name;
      await page.locator("#task-facts", { hasText: `Project${projectName}` }).waitFor();
      const facts = await page.locator("#task-facts").textContent();
      for (const part of ["Kindtask", "PriorityHIGH", `Project${projectName}`, "Worker—", "by you"]) expect(facts).toContain(part);
      await expect(page.locator("#task-org").textContent()).resolves.toBe("admin-org");
      await expect(buttons(page)).resolves.toEqual(["Pause", "Cancel"]);
      await expect(timelineSeqs(page)).resolves.toEqual([1]);

      // A worker claims it and writes a log line: both arrive without a reload.
      await putInState(s, t.id, "running");
      await log(t.id, "installing dependencies");
      await page.locator("#task-status", { hasText: "running (attempt 1)" }).waitFor();
      await page.locator("#timeline li", { hasText: "installing dependencies" }).waitFor();
      await expect(page.locator("#timeline li[data-seq='2']").textContent()).resolves.toMatch(/^#2 \d\d:\d\d:\d\d status queued → running$/);
      await expect(timelineSeqs(page)).resolves.toEqual([1, 2, 3]);
      await expect(page.locator("#task-facts").textContent()).resolves.toContain("Workerwkr_test");
      await expect(buttons(page)).resolves.toEqual(["Pause", "Cancel", "Restart", "Send input"]);
      await expect(page.locator("#task-status-detail").textContent()).resolves.toMatch(/^On wkr_test, started /);
      await screenshot(page, "task");
      // Ended: when, and how long after it started.
      const ended = new Date();
      await putInState(s, t.id, "completed", { started_at: new Date(ended.getTime() - 180_000).toISOString(), finished_at: ended.toISOString() });
      await page.locator("#task-status-detail", { hasText: "Ended just now, 3 min after it started" }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("names, not ids: who created the task, its worker, and who acted in the timeline, also live", async () => {
    const t = (await makeTask(s, w.member, w.project.id, { title: "Named" })) as { id: string };
    const { workerId } = await makeWorker(s, w.owner.orgId, { name: "build-1" });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.owner, "Named");
      // The member has no name: the email stands for them.
      await expect(page.locator("#task-facts").textContent()).resolves.toContain(`by ${w.member.email}`);
      await expect(page.locator("#timeline li[data-seq='1']").textContent()).resolves.toEndWith(`status queued by ${w.member.email}`);
      await changeTask(s.core, null, t.id, (row) => ({
        patch: { status: "running", attempt: 1, worker_id: workerId },
        events: [{ type: "status", actor: { type: "worker", id: workerId }, data: { from: row.status, to: "running" } }],
      }));
      await page.locator("#timeline li", { hasText: /status queued → running by worker build-1$/ }).waitFor();
      await page.locator("#task-facts", { hasText: "Workerbuild-1" }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("after the socket drops, it reconnects and fetches what it missed, once each, in order", async () => {
    const t = await task({ title: "Flaky network" });
    await usePage(browser, async ({ page, problems }) => {
      await trackSockets(page);
      await openTask(page, t.id, w.owner, "Flaky network");
      await page.evaluate("window.__sockets.at(-1).close()");
      await page.locator("#live-state", { hasText: "reconnecting…" }).waitFor();
      await log(t.id, "while away 1");
      await log(t.id, "while away 2");
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await page.locator("#timeline li", { hasText: "while away 2" }).waitFor();
      await log(t.id, "after it came back");
      await page.locator("#timeline li", { hasText: "after it came back" }).waitFor();
      await expect(timelineSeqs(page)).resolves.toEqual([1, 2, 3, 4]);
      await expect(page.evaluate("window.__sockets.length")).resolves.toBe(2);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("needs_input: the question is shown; an answer with Send input moves the task to running", async () => {
    const t = await task({ title: "Pick a branch" });
    // No worker holds it (the fixture's worker id names no real worker to hand the answer to).
    await putInState(s, t.id, "needs_input", { worker_id: null });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.member, "Pick a branch");
      await expect(shownText(page, "#task-needs-kind")).resolves.toBe("Waiting for your input:");
      await expect(page.locator("#task-needs-message").textContent()).resolves.toBe("Which branch?");
      await expect(page.locator("#task-needs").getAttribute("class")).resolves.toBe("needs attention");
      await page.getByLabel("Answer").fill("release-2.1");
      await click(page, "Send input");
      await expect(shownText(page, "#action-done")).resolves.toBe("Send input: done. The task is now running.");
      expect(await statusOf(t.id)).toBe("running");
      await page.locator("#timeline li", { hasText: "(input: release-2.1)" }).waitFor();
      await expect(page.locator("#task-needs").isHidden()).resolves.toBe(true);
      await expect(page.getByLabel("Answer").inputValue()).resolves.toBe("");
      await screenshot(page, "task-input");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("pause, resume and cancel; a refused action (409) and a too-long reason are shown", async () => {
    const t = await task({ title: "Controls" });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.owner, "Controls");
      await click(page, "Pause");
      await page.locator("#task-status", { hasText: /^paused$/ }).waitFor();
      expect(await statusOf(t.id)).toBe("paused");
      await expect(buttons(page)).resolves.toEqual(["Resume", "Cancel", "Restart"]);
      await click(page, "Resume");
      await page.locator("#task-status", { hasText: /^queued$/ }).waitFor();
      expect(await statusOf(t.id)).toBe("queued");

      await page.getByLabel("Reason").fill("x".repeat(2001));
      await click(page, "Cancel");
      await confirm(page, "Yes, cancel");
      await expect(shownText(page, "#action-error")).resolves.toBe("Please check: reason: at most 2000 characters.");
      expect(await statusOf(t.id)).toBe("queued");

      await page.getByLabel("Reason").fill("not needed any more");
      await click(page, "Cancel");
      await confirm(page, "Yes, cancel");
      await page.locator("#task-status", { hasText: /^cancelled$/ }).waitFor();
      await expect(page.locator("#action-error").isHidden()).resolves.toBe(true);
      expect(await statusOf(t.id)).toBe("cancelled");
      await page.locator("#timeline li", { hasText: /^#\d+ \S+ action cancel by Admin: not needed any more$/ }).waitFor();

      // Decided elsewhere, and the page did not hear of it (changed without a live update).
      await s.core.store.write(txChangeTask(s.core, null, t.id, () => ({ patch: { status: "queued", finished_at: null }, events: [] })));
      await click(page, "Retry");
      await expect(shownText(page, "#action-error")).resolves.toBe(
        "Cannot retry a task that is queued. The task changed meanwhile; the buttons now show what it allows.",
      );
      await page.locator("#task-status", { hasText: /^queued$/ }).waitFor();
      await expect(buttons(page)).resolves.toEqual(["Pause", "Cancel"]);
      await screenshot(page, "task-refused");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a viewer sees the task and what the state allows, but the buttons are off and say why; nothing changes", async () => {
    const t = await task({ title: "Watched" });
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.viewer, "Watched");
      await expect(buttons(page)).resolves.toEqual(["Pause", "Cancel"]);
      await expect(page.locator("#action-buttons button").evaluateAll((bs) => bs.map((b) => (b as any).disabled))).resolves.toEqual([true, true]);
      await expect(shownText(page, "#action-viewer")).resolves.toContain("viewer");
      // The shortcut does nothing either.
      await page.keyboard.press("p");
      expect(await statusOf(t.id)).toBe("queued");
      // The API refuses a viewer anyway (the page only mirrors it).
      const refused = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${t.id}/actions`, { token: w.viewer.accessToken, body: { action: "pause" } });
      expect([refused.status, refused.body.error.message]).toEqual([403, "your role (viewer) lacks the permission task.control"]);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("artifacts: a working download link; an image shown as a preview, also one arriving live", async () => {
    const t = await task({ title: "With files" });
    await storeArtifact(s.core, w.owner.orgId, t.id, "report.txt", new TextEncoder().encode("all green\n"), 1);
    await usePage(browser, async ({ page, problems }) => {
      await openTask(page, t.id, w.owner, "With files");
      const link = page.getByRole("link", { name: "report.txt" });
      // A page of the app (which a new tab can open: task-artifacts.test.ts); a plain click downloads in place.
      await expect(link.getAttribute("href")).resolves.toBe(`/tasks/${t.id}/artifacts/report.txt`);
      const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
      expect(download.suggestedFilename()).toBe("report.txt");
      expect(readFileSync(await download.path()).toString()).toBe("all green\n");

      await storeArtifact(s.core, w.owner.orgId, t.id, "screen-shot.png", PNG, 1);
      const img = page.getByRole("img", { name: "Preview of screen-shot.png" });
      await img.waitFor();
      // A function, not a string: a string predicate that needs polling is evaluated with eval, which the page's CSP forbids.
      await page.waitForFunction(() => (globalThis as any).document.querySelector("img.preview")?.naturalWidth === 1);
      await expect(img.getAttribute("src")).resolves.toStartWith("data:image/png;base64,");
      await expect(page.locator("#artifacts li").allTextContents()).resolves.toEqual(["report.txt text/plain; charset=utf-8, 10 bytes", "screen-shot.png image/png, 70 bytes"]);
      await page.locator("#timeline li", { hasText: "artifact screen-shot.png (70 bytes)" }).waitFor();
      await screenshot(page, "task-artifacts");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("another organization's task, an unknown id and a malformed one: not found, nothing of the other org shown", async () => {
    const theirs = await makeTask(s, w.other, w.otherProject.id, { title: "Their secret plan", prompt: "secret prompt" });
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/tasks/${theirs.id}`);
      await signInWithForm(page, w.owner.email, PASSWORD);
      await page.getByRole("heading", { name: "Task not found" }).waitFor();
      await expect(shownText(page, "#missing-text")).resolves.toBe("There is no such task, or it is not in one of your organizations.");
      const body = (await page.locator("body").textContent()) ?? "";
      expect(body).not.toContain("Their secret plan");
      expect(body).not.toContain("secret prompt");
      for (const id of ["tsk_00000000000000000000000000", "%3Cb%3Ebold%3C%2Fb%3E"]) {
        await page.goto(`${s.url}/tasks/${id}`);
        await page.getByRole("heading", { name: "Task not found" }).waitFor();
        await expect(page.locator("main b").count()).resolves.toBe(0);
      }
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("markup in a title, prompt, question and log line is shown as text", async () => {
    const t = await task({ title: XSS, prompt: `before ${XSS} after` });
    await putInState(s, t.id, "needs_input", { needs: JSON.stringify({ kind: "input", message: XSS }) });
    await log(t.id, XSS);
    await usePage(browser, async ({ page, problems }) => {
      const dialogs: string[] = [];
      page.on("dialog", (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await openTask(page, t.id, w.owner, XSS);
      await expect(page.locator("#task-prompt").textContent()).resolves.toBe(`before ${XSS} after`);
      await expect(page.locator("#task-needs-message").textContent()).resolves.toBe(XSS);
      await page.locator("#timeline li", { hasText: `log ${XSS}` }).waitFor();
      await expect(page.locator("main img").count()).resolves.toBe(0);
      expect(dialogs).toEqual([]);
      expect(problems).toEqual([]);
    });
  }, 90_000);
});

// Access tokens that last 2 s, so that the socket's renewal paths run: a reconnect with an
// expired token is refused with 4401, and the page renews its sign-in, then reconnects; a sign-in
// revoked elsewhere closes the socket with 4401 and cannot be renewed: the page says so.
describeBrowser("web: task page, when the sign-in runs out", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  webSuite(async (up) => {
    ({ s, browser } = up);
    // Only what these tests use, each call with an access token just signed in: one lasts 2 s
    // here, which a loaded machine spends on a few calls (a whole makeWorld did not fit).
    const owner = await createAdmin(s);
    const fresh = async () => ({ ...owner, accessToken: (await login(s, owner.email)).accessToken });
    const ownerToken = await makeToken(s, await fresh());
    const project = await makeProject(s, await fresh(), `main-${Math.random().toString(36).slice(2, 8)}`);
    w = { owner, ownerToken, project } as World;
  }, { server: { accessTokenTtlSec: 2, liveTimeouts: { authMs: 10_000, recheckMs: 200 } } });

  /** A task made with the owner's aot_ token (the owner's access token lasts only 2 s here). */
  async function newTask(title: string): Promise<string> {
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.ownerToken, body: { projectId: w.project.id, title, prompt: "p" } });
    expect(r.status).toBe(201);
    return r.body.id;
  }
  const log = (id: string, line: string) => logLine(s, id, line);
  async function open(page: Page, id: string, title: string) {
    await trackSockets(page);
    await page.goto(`${s.url}/tasks/${id}`);
    await signInWithForm(page, w.owner.email, PASSWORD);
    await page.getByRole("heading", { name: title }).waitFor();
    await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
  }

  test("a reconnect with an expired token is refused (4401); the page renews its sign-in and carries on live", async () => {
    const id = await newTask("Long night");
    await usePage(browser, async ({ page, problems }) => {
      await open(page, id, "Long night");
      await Bun.sleep(2500); // the page's access token has expired; its open socket stays (the session is valid)
      await log(id, "still live on the old socket");
      await page.locator("#timeline li", { hasText: "still live on the old socket" }).waitFor();
      await page.evaluate("window.__sockets.at(-1).close()");
      // The close and the refused reconnect happen after evaluate returns: wait for both.
      await page.waitForFunction(() => ((globalThis as any).__closes ?? []).length >= 2);
      await expect(page.evaluate("window.__closes")).resolves.toEqual([1005, 4401]);
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await expect(page.evaluate("window.__sockets.length")).resolves.toBe(3);
      await log(id, "on the renewed socket");
      await page.locator("#timeline li", { hasText: "on the renewed socket" }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a sign-in revoked elsewhere: the socket is closed (4401) and the page says the sign-in has ended", async () => {
    const id = await newTask("Signed out elsewhere");
    await usePage(browser, async ({ page }) => {
      await open(page, id, "Signed out elsewhere");
      const web = (await s.core.store.read(
        get<{ id: string }>("SELECT id FROM sessions WHERE user_id = ? AND client = 'web' AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1", w.owner.userId),
      ))!;
      await revokeSession(s.core, web.id, "signed out elsewhere");
      // The socket is closed for the token, the renewal is refused: the page asks to sign in again, saying why.
      await expect(shownText(page, "#signin-ended")).resolves.toStartWith("Your sign-in has ended");
      await expect(page.evaluate("window.__closes")).resolves.toEqual([4401]);
      expect(new URL(page.url()).pathname).toBe(`/tasks/${id}`);
      // Signing in again shows the same task, live.
      await signInWithForm(page, w.owner.email, PASSWORD);
      await page.getByRole("heading", { name: "Signed out elsewhere" }).waitFor();
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
    });
  }, 90_000);
});
