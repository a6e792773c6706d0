// The workers page "/workers" (SPEC §7, §11): workers paired by device code over HTTP as
// `ao worker` pairs, one of them connected (online, with its agents and tools); approve the one
// waiting, rename and relabel, revoke; a viewer sees no buttons. Checked through the API.
import { afterAll, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember, newOrg, type Session } from "../helpers/identity";
import { DESKTOP, PHONE, describeBrowser, docsScreenshot, holdAnswers, openSignedIn, overflowsSideways, shownText, trackSockets, webSuite } from "./browser";
import { MANAGE_TEST_MS, PASSWORD, connectWorker, manageSteps, openAs, pairWorker, worker } from "./manage-fixtures";
import { workerApi, type ProtocolClient } from "../workers/helpers";
import { run } from "../../src/db/query";

describeBrowser("web: workers page", () => {
  let s: TestServer;
  let browser: Browser;
  const steps = manageSteps(() => browser);
  const sockets: ProtocolClient[] = [];
  webSuite((up) => ({ s, browser } = up));
  afterAll(async () => {
    for (const c of sockets) c.close();
  });

  /** An org that approves its workers, with one worker waiting and one online. */
  async function fleet() {
    const owner = await newOrg(s);
    expect((await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: { requireWorkerApproval: true } })).status).toBe(200);
    const waiting = await pairWorker(s, owner, { name: "build-box", labels: ["linux"] });
    const busy = await pairWorker(s, owner, { name: "gpu-box", labels: ["gpu", "linux"] });
    await s.api("POST", `/orgs/${owner.orgId}/workers/${busy.workerId}/approve`, { token: owner.accessToken });
    sockets.push(await connectWorker(s, busy.credential));
    return { owner, waiting, busy };
  }
  const card = (page: Page, name: string) => page.locator(".worker-card", { has: page.locator(".worker-name", { hasText: new RegExp(`^${name}$`) }) });
  /** Signed in through the form (the first test), or already (the others). */
  const openWithForm = (page: Page, who: Session) => openSignedIn(page, `${s.url}/workers`, who.email, PASSWORD, "Sign in to see the workers.");
  const open = (page: Page, who: Session) => openAs(s, page, who, "/workers");

  test("shows each worker's status, agents with versions, tools and labels; the pairing command; approve the waiting one", async () => {
    const { owner, waiting, busy } = await fleet();
    expect((await worker(s, owner, waiting.workerId)).status).toBe("pending_approval");
    await steps(async ({ page, problems }) => {
      await openWithForm(page, owner);
      const online = card(page, "gpu-box");
      await online.locator(".worker-status", { hasText: "online" }).waitFor();
      expect(await online.locator(".agents .chip").allTextContents()).toEqual(["claude 2.1.197", "exec (make)"]);
      expect(await online.locator(".tools .chip").allTextContents()).toEqual(["git 2.47.2", "bun 1.4.5"]);
      expect(await online.locator(".labels .chip").allTextContents()).toEqual(["gpu", "linux"]);
      await expect(online.getByRole("button", { name: "Approve" }).count()).resolves.toBe(0);
      expect(await page.locator("#pair-command").textContent()).toBe(`ao worker --server ${s.url}`);
      // The one waiting comes first, marked, with Approve.
      await expect(page.locator(".worker-card .worker-name").first().textContent()).resolves.toBe("build-box");
      const pending = card(page, "build-box");
      await pending.locator(".worker-status", { hasText: "waiting for approval" }).waitFor();
      // The card changes before the answer (optimistic): read the worker back once it came.
      const answered = page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith(`${waiting.workerId}/approve`));
      await pending.getByRole("button", { name: "Approve" }).click();
      await pending.locator(".worker-status", { hasText: "offline" }).waitFor();
      expect((await answered).status()).toBe(200);
      const approved = await worker(s, owner, waiting.workerId);
      expect(approved.status).toBe("offline");
      expect((await s.api("GET", `/orgs/${owner.orgId}/workers/${busy.workerId}`, { token: owner.accessToken })).body.status).toBe("online");
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a worker that connects, is changed elsewhere and goes shows so live (worker.updated over the socket)", async () => {
    const { owner, waiting } = await fleet();
    expect((await s.api("POST", `/orgs/${owner.orgId}/workers/${waiting.workerId}/approve`, { token: owner.accessToken })).status).toBe(200);
    await steps(async ({ page, problems }) => {
      // What the live socket brings, to tell its messages from the page's 15 s look.
      const frames: string[] = [];
      page.on("websocket", (ws) => ws.on("framereceived", (f) => void frames.push(String(f.payload))));
      await open(page, owner);
      const box = card(page, "build-box");
      await box.locator(".worker-status", { hasText: "offline" }).waitFor();
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      const c = await connectWorker(s, waiting.credential);
      sockets.push(c);
      await box.locator(".worker-status", { hasText: "online" }).waitFor();
      expect((await s.api("PATCH", `/orgs/${owner.orgId}/workers/${waiting.workerId}`, { token: owner.accessToken, body: { labels: ["arm"] } })).status).toBe(200);
      await box.locator(".labels .chip", { hasText: /^arm$/ }).waitFor();
      c.close();
      await box.locator(".worker-status", { hasText: "offline" }).waitFor();
      const heard = frames.map((f) => JSON.parse(f)).filter((m) => m.type === "worker.updated" && m.worker.id === waiting.workerId);
      expect(heard.map((m) => [m.worker.status, m.worker.labels])).toEqual([
        ["online", ["linux"]],
        ["online", ["arm"]],
        ["offline", ["arm"]],
      ]);
      // A worker paired now shows at once, by the socket (not the page's 15 s look).
      const paired = await pairWorker(s, owner, { name: "new-box" });
      await card(page, "new-box").waitFor();
      expect(frames.map((f) => JSON.parse(f)).some((m) => m.type === "worker.updated" && m.worker.id === paired.workerId)).toBe(true);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a reload of the list answered before a worker connected and another was approved does not undo either when it lands after them", async () => {
    const owner = await newOrg(s);
    expect((await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: { requireWorkerApproval: true } })).status).toBe(200);
    await pairWorker(s, owner, { name: "build-box" });
    const idle = await pairWorker(s, owner, { name: "gpu-box" });
    const renamed = await pairWorker(s, owner, { name: "late-box" });
    expect((await s.api("POST", `/orgs/${owner.orgId}/workers/${idle.workerId}/approve`, { token: owner.accessToken })).status).toBe(200);
    await steps(async ({ page, problems }) => {
      await trackSockets(page);
      await holdAnswers(page);
      await open(page, owner);
      await card(page, "gpu-box").locator(".worker-status", { hasText: "offline" }).waitFor();
      await card(page, "build-box").locator(".worker-status", { hasText: "waiting for approval" }).waitFor();
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      // A rename no socket tells of (written straight into the database): it shows once the list
      // is read again. That list is read after the next subscription, and its answer is held in the page.
      await s.core.store.write(run("UPDATE workers SET name = ? WHERE id = ?", "late-box renamed", renamed.workerId));
      await page.evaluate(`window.__hold = "/workers?limit="`);
      await page.evaluate("window.__sockets.at(-1).close()");
      await page.waitForFunction(() => (globalThis as any).__held.length === 1);
      // Meanwhile one worker connects (the socket says so) and the other is approved (its answer and the socket).
      sockets.push(await connectWorker(s, idle.credential));
      await card(page, "gpu-box").locator(".worker-status", { hasText: "online" }).waitFor();
      const approved = page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith("/approve"));
      await card(page, "build-box").getByRole("button", { name: "Approve" }).click();
      expect((await approved).status()).toBe(200);
      await expect(card(page, "late-box renamed").count()).resolves.toBe(0);
      // The older list lands: its rename shows, and the two changes heard meanwhile stay.
      await page.evaluate("window.__hold = null; window.__held.shift()()");
      await card(page, "late-box renamed").waitFor();
      await expect(card(page, "gpu-box").locator(".worker-status").textContent()).resolves.toBe("online");
      await expect(card(page, "build-box").locator(".worker-status").textContent()).resolves.toBe("offline");
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the tasks a worker holds show by title, those waiting on a person too; one ending or claimed shows live", async () => {
    const owner = await newOrg(s);
    const paired = await pairWorker(s, owner, { name: "busy-box" });
    const socket = await connectWorker(s, paired.credential);
    sockets.push(socket);
    const project = (await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "held" } })).body.id;
    const call = workerApi(s, paired.credential);
    const held = new Map<string, { id: string; leaseToken: string }>();
    const transition = async (id: string, leaseToken: string, body: Record<string, unknown>) => (await call("POST", `/worker/tasks/${id}/transition`, { leaseToken, ...body })).status;
    for (const title of ["Paint the fence", "Ask which colour"]) {
      const id = (await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: { projectId: project, title, prompt: "p" } })).body.id;
      const offer = await socket.next("offer", (m) => m.taskId === id);
      const claim = await call("POST", `/worker/tasks/${id}/claim`, { offerId: offer.offerId });
      expect(claim.status).toBe(200);
      held.set(title, { id, leaseToken: claim.body.leaseToken });
      // Its heartbeats say it holds the task, as `ao worker`'s do (else the server takes it back).
      socket.running.push({ taskId: id, attempt: claim.body.attempt });
      if (title.startsWith("Ask")) {
        const asked = await call("POST", `/worker/tasks/${id}/transition`, { leaseToken: claim.body.leaseToken, to: "needs_input", needs: { message: "which colour?" } });
        expect(asked.status).toBe(200);
      }
    }
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      const chips = card(page, "busy-box").locator(".running .chip");
      // The chips come with the workers, their titles with the tasks' lists after them: wait for the titles.
      for (const title of ["Ask which colour", "Paint the fence"]) await chips.filter({ hasText: title }).waitFor();
      expect((await chips.allTextContents()).sort()).toEqual(["Ask which colour", "Paint the fence"]);
      // Live from here: the page's own reads of the workers and tasks get no answer, so what changes
      // comes over the socket (a task's record), not from its 15 s look.
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await page.route(/\/api\/v1\/orgs\/[^/]+\/(workers|tasks)(\?|$)/, () => {});
      // One ends: its chip goes. Its slot takes a new one: that one's chip comes, with its title.
      const paint = held.get("Paint the fence")!;
      expect(await transition(paint.id, paint.leaseToken, { to: "completed", summary: "painted" })).toBe(200);
      socket.running = socket.running.filter((r) => r.taskId !== paint.id);
      await chips.filter({ hasText: "Paint the fence" }).waitFor({ state: "detached" });
      const sweep = (await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: { projectId: project, title: "Sweep the yard", prompt: "p" } })).body.id;
      const offer = await socket.next("offer", (m) => m.taskId === sweep);
      const claim = await call("POST", `/worker/tasks/${sweep}/claim`, { offerId: offer.offerId });
      expect(claim.status).toBe(200);
      socket.running.push({ taskId: sweep, attempt: claim.body.attempt });
      await chips.filter({ hasText: "Sweep the yard" }).waitFor();
      expect((await chips.allTextContents()).sort()).toEqual(["Ask which colour", "Sweep the yard"]);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("rename and relabel (bad labels are refused beside the field), then revoke: the credential stops at once", async () => {
    const { owner, busy } = await fleet();
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      const c = card(page, "gpu-box");
      await c.getByRole("button", { name: "Edit" }).click();
      await c.getByLabel("Worker name").fill("gpu-box-2");
      await c.getByLabel("Labels").fill("gpu, Bad Label");
      await c.getByRole("button", { name: "Save" }).click();
      // Which label, and what a label may be, in words (a space does not split a label).
      await expect(shownText(page, `#worker-labels-${busy.workerId}-error`)).resolves.toBe(
        '"Bad Label" must be a label: lower-case letters, digits and . _ : -, starting with a letter or digit, up to 50 characters',
      );
      expect((await worker(s, owner, busy.workerId)).name).toBe("gpu-box");
      await c.getByLabel("Labels").fill("gpu, cuda-12");
      await c.getByRole("button", { name: "Save" }).click();
      const renamed = card(page, "gpu-box-2");
      await renamed.locator(".labels .chip", { hasText: "cuda-12" }).waitFor();
      const after = await worker(s, owner, busy.workerId);
      expect([after.name, after.labels]).toEqual(["gpu-box-2", ["gpu", "cuda-12"]]);

      await renamed.getByRole("button", { name: "Revoke" }).click();
      // The card shows "revoked" before the answer (optimistic): read the worker back once it came.
      const revoked = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().includes(busy.workerId));
      await page.getByRole("dialog").getByRole("button", { name: "Yes, revoke" }).click();
      await renamed.locator(".worker-status", { hasText: "revoked" }).waitFor();
      expect((await revoked).status()).toBe(200);
      expect((await worker(s, owner, busy.workerId)).status).toBe("revoked");
      expect((await s.api("GET", "/worker/me", { token: busy.credential })).status).toBe(401);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a member or viewer sees the workers but no Approve, Edit or Revoke, and why", async () => {
    const { owner } = await fleet();
    for (const role of ["member", "viewer"] as const) {
      const who = await addMember(s, owner, role);
      await steps(async ({ page, problems }) => {
        await open(page, who);
        await card(page, "build-box").locator(".worker-status", { hasText: "waiting for approval" }).waitFor();
        await page.getByText("Only owners and admins approve, revoke or change workers.").waitFor();
        for (const name of ["Approve", "Edit", "Revoke"]) await expect(page.getByRole("button", { name }).count()).resolves.toBe(0);
        expect(problems).toEqual([]);
      });
    }
  }, MANAGE_TEST_MS);

  test("a long tool version (a worker that reported an error as one) stays inside its card", async () => {
    const owner = await newOrg(s);
    const w = await pairWorker(s, owner, { name: "rusty" });
    const long = "error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly, a";
    sockets.push(await connectWorker(s, w.credential, { tools: [{ name: "cargo", version: long }] }));
    for (const size of [DESKTOP, PHONE]) {
      await steps(async ({ page, problems }) => {
        await open(page, owner);
        await card(page, "rusty").locator(".worker-status", { hasText: "online" }).waitFor();
        await expect(card(page, "rusty").locator(".tools .chip").getAttribute("title")).resolves.toBe(`cargo ${long}`);
        expect(await overflowsSideways(page)).toBe(false);
        expect(problems).toEqual([]);
      }, size);
    }
  }, MANAGE_TEST_MS);

  test("an org without workers says how to pair one; screenshot; the phone layout", async () => {
    const lonely = await newOrg(s);
    await steps(async ({ page, problems }) => {
      await open(page, lonely);
      await page.locator("#workers-empty").getByText("No worker yet.").waitFor();
      expect(problems).toEqual([]);
    });
    const { owner } = await fleet();
    await steps(
      async ({ page, problems }) => {
        await open(page, owner);
        await card(page, "gpu-box").locator(".worker-status", { hasText: "online" }).waitFor();
        await docsScreenshot(page, "workers");
        expect(problems).toEqual([]);
      },
      DESKTOP,
    );
    await steps(
      async ({ page, problems }) => {
        await open(page, owner);
        await card(page, "gpu-box").locator(".worker-status", { hasText: "online" }).waitFor();
        expect(await overflowsSideways(page)).toBe(false);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, MANAGE_TEST_MS);
});
