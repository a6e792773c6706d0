// The task page with a real worker (SPEC §5, §7, §11): an exec agent asks for approval through
// `::ao::needs-approval` and waits on stdin; the person answers from the task page (the button,
// or the keyboard with a reason) and the agent gets the answer, as the API and its output show.
// Its log line's ANSI colour is shown as colour, not as escape codes. A queued task the worker
// cannot take (its project asks for a label the worker lacks) says why until the worker takes it.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { orgWithProject, until } from "../workers/helpers";
import { preparedWorker, startWorker, type WorkerProcess } from "../e2e/worker-helpers";
import { describeBrowser, openSignedIn, shownText, usePage, webSuite } from "./browser";

const PASSWORD = "correct horse battery staple";
const AGENT = `
printf '\\033[32mchecking\\033[0m the build\\n'
echo "::ao::needs-approval Deploy to production?"
read decision
echo "decision: $decision"
[ "$decision" = "approve" ] || { echo "::ao::summary $decision"; exit 1; }
echo "::ao::summary deployed"
`;

describeBrowser("web: answering a real worker's question from the task page", () => {
  let s: TestServer;
  let browser: Browser;
  let owner: Session;
  let tmp: string;
  let worker: WorkerProcess;
  let workerId: string;
  let p: Awaited<ReturnType<typeof orgWithProject>>;
  webSuite(
    async (up) => {
      ({ s, browser } = up);
      tmp = mkdtempSync(join(tmpdir(), "ao-web-worker-"));
      writeFileSync(join(tmp, "agent.sh"), AGENT);
      owner = await createAdmin(s);
      p = await orgWithProject(s, owner);
      const dataDir = join(tmp, "worker");
      ({ workerId } = await preparedWorker(s, p.orgId, dataDir));
      worker = startWorker(s, dataDir, ["--exec", `sh ${join(tmp, "agent.sh")}`]);
      await worker.waitFor(/connected as/, 20_000);
    },
    { server: { workerTimeouts: { offerMs: 2000, offlineMs: 1500, heartbeatMs: 300 } }, timeoutMs: 90_000 },
  );
  afterAll(async () => {
    await worker?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const get = async (id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;
  const create = async (title: string) => (await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: p.token, body: { projectId: p.projectId, title, prompt: "ship it" } })).body.id as string;
  /** Opens the task, signed in, and waits until the agent's question shows (it arrives live). */
  async function waitingTask(page: Page, id: string) {
    await openSignedIn(page, `${s.url}/tasks/${id}`, owner.email, PASSWORD, "Sign in to see the task.");
    await page.locator("#task-status", { hasText: "needs_approval" }).waitFor({ timeout: 20_000 });
    await expect(shownText(page, "#task-needs")).resolves.toBe("Waiting for your approval:Deploy to production?");
  }

  test("Approve: the agent reads approve and completes; the page follows it live; the log's colour is a class", async () => {
    const id = await create("Deploy");
    await usePage(browser, async ({ page, problems }) => {
      await waitingTask(page, id);
      const coloured = page.locator("#timeline li[data-type=log] .fg-ansi-green", { hasText: "checking" });
      await coloured.waitFor();
      await expect(page.locator("#timeline li[data-type=log]", { hasText: "the build" }).first().textContent()).resolves.not.toContain("\u001b");
      await page.locator("#action-buttons").getByRole("button", { name: "Approve", exact: true }).click();
      await page.locator("#task-status", { hasText: /^completed/ }).waitFor({ timeout: 20_000 });
      await page.locator("#timeline li", { hasText: "decision: approve" }).waitFor();
      await expect(shownText(page, "#task-summary")).resolves.toBe("deployed");
      // Stale messages go: the answered question is no longer shown as waiting.
      await expect(page.locator("#task-needs.attention").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    }, { width: 1280, height: 900 });
    expect(await get(id)).toMatchObject({ status: "completed", summary: "deployed" });
  }, 90_000);

  test("Deny with a reason, from the keyboard (d): the agent reads the reason and fails as it decides", async () => {
    const id = await create("Deploy on Friday");
    await usePage(browser, async ({ page, problems }) => {
      await waitingTask(page, id);
      await page.getByLabel(/^Reason/).fill("not on a Friday");
      // Out of the field first: a key typed in a field is text, not a shortcut.
      await page.locator("#task-title").click();
      await page.keyboard.press("d");
      await page.locator("#task-status", { hasText: /^failed/ }).waitFor({ timeout: 20_000 });
      await page.locator("#timeline li[data-type=action]", { hasText: "deny by" }).waitFor();
      // Why it failed, by the status (the record as the live update brought it), not only down the timeline.
      await page.locator("#task-failure", { hasText: "the agent exited with code 1" }).waitFor();
      await expect(shownText(page, "#task-failure")).resolves.toBe("Failed: the agent exited with code 1");
      expect(problems).toEqual([]);
    });
    await until(async () => (await get(id)).summary === "deny not on a Friday", 10_000, 50);
    const events = (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token })).body.items as { type: string; data: any }[];
    expect(events.find((e) => e.type === "action")?.data).toMatchObject({ action: "deny", reason: "not on a Friday" });
  }, 90_000);

  test("Deny whose answer comes after the agent has already failed: the page says nothing that contradicts the task", async () => {
    const id = await create("Deploy, denied fast");
    await usePage(browser, async ({ page, problems }) => {
      await waitingTask(page, id);
      // The action's answer (the task as the denial left it: running) is held back until the live
      // update of the agent's failure has reached the page, as happens when the agent exits at once.
      let answered!: () => void;
      const held = new Promise<void>((resolve) => (answered = resolve));
      await page.route(`**/tasks/${id}/actions`, async (route) => {
        const response = await route.fetch();
        // (Its text says "denying…" while the action is under way; its data-status is the task's.)
        await page.locator("#task-status[data-status=failed]").waitFor({ timeout: 20_000 });
        await route.fulfill({ response });
        answered();
      });
      await page.locator("#action-buttons").getByRole("button", { name: "Deny", exact: true }).click();
      await held;
      // Acting ends with the answer: the buttons of the failed task are enabled again.
      await page.waitForFunction(() => {
        const buttons: { textContent: string | null; disabled: boolean }[] = [...(globalThis as any).document.querySelectorAll("#action-buttons button")];
        const retry = buttons.find((b) => b.textContent?.trim() === "Retry");
        return retry !== undefined && !retry.disabled;
      });
      await expect(page.locator("#task-status").textContent()).resolves.toMatch(/^failed/);
      await expect(page.locator("#action-done", { hasText: "running" }).count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a queued task no online worker could take says why; the line goes when the worker, given the label, takes it", async () => {
    const gpu = await orgWithProject(s, owner, { workerLabels: ["gpu"] });
    const created = await s.api("POST", `/orgs/${gpu.orgId}/tasks`, { token: gpu.token, body: { projectId: gpu.projectId, title: "Render", prompt: "ship it" } });
    expect(created.body.waitingReason).toBe("no online worker has the label 'gpu' its project asks for");
    await usePage(browser, async ({ page, problems }) => {
      await openSignedIn(page, `${s.url}/tasks/${created.body.id}`, owner.email, PASSWORD, "Sign in to see the task.");
      await expect(shownText(page, "#task-waiting")).resolves.toBe("Waiting: no online worker has the label 'gpu' its project asks for. Workers");
      await expect(page.locator("#task-waiting a").getAttribute("href")).resolves.toBe(`/workers?org=${gpu.orgId}`);
      // The worker gets the label: it is offered the task and runs it; the page, following live, drops the line.
      expect((await s.api("PATCH", `/orgs/${gpu.orgId}/workers/${workerId}`, { token: gpu.token, body: { labels: ["gpu"] } })).status).toBe(200);
      await page.locator("#task-status", { hasText: "needs_approval" }).waitFor({ timeout: 20_000 });
      await expect(page.locator("#task-waiting").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
    expect((await s.api("POST", `/orgs/${gpu.orgId}/tasks/${created.body.id}/actions`, { token: gpu.token, body: { action: "cancel" } })).status).toBe(200);
  }, 90_000);

  test("why a queued task waits changes live with the worker, on the task page (its record is sent again), the board (its queued column read again) and the list", async () => {
    // A label the worker lacks (the test before gave it "gpu").
    const gpu = await orgWithProject(s, owner, { workerLabels: ["tpu"] });
    const created = await s.api("POST", `/orgs/${gpu.orgId}/tasks`, { token: gpu.token, body: { projectId: gpu.projectId, title: "Render later", prompt: "ship it" } });
    const policy = async (value: Record<string, unknown>) => expect((await s.api("PATCH", `/orgs/${gpu.orgId}/workers/${workerId}`, { token: gpu.token, body: { policy: value } })).status).toBe(200);
    const LABEL = "no online worker has the label 'tpu' its project asks for";
    const LIMITED = "no online worker takes this project's tasks (each is limited to other projects)";
    try {
      await usePage(browser, async ({ page, problems }) => {
        // What the live socket brings, to tell its message from a page reading the task again.
        const frames: string[] = [];
        page.on("websocket", (ws) => ws.on("framereceived", (f) => void frames.push(String(f.payload))));
        await openSignedIn(page, `${s.url}/tasks/${created.body.id}`, owner.email, PASSWORD, "Sign in to see the task.");
        await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
        await expect(shownText(page, "#task-waiting")).resolves.toBe(`Waiting: ${LABEL}. Workers`);
        await policy({ projects: [p.projectId] });
        await page.locator("#task-waiting", { hasText: LIMITED }).waitFor();
        const sent = frames.map((f) => JSON.parse(f)).filter((m) => m.type === "task.updated" && m.task.id === created.body.id);
        expect(sent.map((m) => m.task.waitingReason)).toEqual([LIMITED]);
        // The board, following the org: the worker's change arrives as worker.updated, and the queued card follows.
        await page.goto(`${s.url}/tasks?org=${gpu.orgId}&view=board`);
        const card = page.locator(`.column[data-status='queued'] .task-card[data-id='${created.body.id}'] .card-waiting`);
        await card.filter({ hasText: LIMITED }).waitFor();
        await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
        await policy({});
        await card.filter({ hasText: LABEL }).waitFor();
        expect(frames.some((f) => f.startsWith('{"type":"worker.updated"') && f.includes(workerId))).toBe(true);
        // The list says it on hover, and reads its first page again the same way.
        await page.goto(`${s.url}/tasks?org=${gpu.orgId}`);
        const row = (title: string) => page.locator(`#tasks-rows tr[data-id='${created.body.id}'] td[title=${JSON.stringify(`Waiting: ${title}`)}]`);
        await row(LABEL).waitFor();
        await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
        await policy({ projects: [p.projectId] });
        await row(LIMITED).waitFor();
        expect(problems).toEqual([]);
      });
    } finally {
      await policy({});
      expect((await s.api("POST", `/orgs/${gpu.orgId}/tasks/${created.body.id}/actions`, { token: gpu.token, body: { action: "cancel" } })).status).toBe(200);
    }
  }, 90_000);
});
