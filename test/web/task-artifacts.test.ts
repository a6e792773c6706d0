// An artifact's own page "/tasks/:taskId/artifacts/:name" (SPEC §5, §11): where the task page's
// artifact link lands when it is opened in a new tab (Ctrl/Cmd click, middle click, "Open link in
// new tab"). A plain tab sends no bearer token, so the page signs in like every page (the refresh
// cookie, or the sign-in form), finds the task in the person's organizations, fetches the file
// with the token and offers it: its name, type and size, Download, an image's preview, and a
// clear "not found" for an unknown artifact or a task the person may not see.
import { expect, test } from "bun:test";
import type { Browser, Download, Page } from "playwright-core";
import { readFileSync } from "node:fs";
import type { TestServer } from "../helpers/server";
import { makeTask, type World } from "../tasks/fixtures";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { pagePolicy } from "../../src/modules/web";
import { describeBrowser, openSignedIn, screenshot, shownText, signInWithForm, titled, usePage, worldSuite } from "./browser";

const PASSWORD = "correct horse battery staple";
// A 1x1 transparent PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");
const REPORT = "all green\nno flaky tests\n";

/** The bytes of a download the page started, once the browser has it. */
const bytesOf = async (download: Download) => readFileSync(await download.path());

/** Clicks the artifact page's Download and answers what the browser saved. */
async function download(page: Page): Promise<Download> {
  const [saved] = await Promise.all([page.waitForEvent("download"), page.locator("#artifact-download").click()]);
  return saved;
}

describeBrowser("web: an artifact's page", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  /** A task of the main organization with `files` stored as a worker's upload would store them. */
  async function taskWith(title: string, files: Record<string, Uint8Array>, who = w.owner, projectId = w.project.id) {
    const t = (await makeTask(s, who, projectId, { title })) as { id: string };
    for (const [name, body] of Object.entries(files)) await storeArtifact(s.core, who.orgId, t.id, name, body, 1);
    return t.id;
  }
  const pageOf = (taskId: string, name: string) => `${s.url}/tasks/${taskId}/artifacts/${name}`;

  test("/tasks/:taskId/artifacts/:name is the page, with the security headers; a too long id or name is refused; not in the OpenAPI document", async () => {
    const res = await fetch(pageOf("tsk_anything", "report.txt"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(pagePolicy(s.core.config));
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await res.text()).toContain('<script type="module" src="/assets/app.js"></script>');
    // A name may be as long as an artifact's (128 characters), an id as long as the API's (64).
    expect((await fetch(pageOf("tsk_anything", "n".repeat(128)))).status).toBe(200);
    expect((await fetch(pageOf("tsk_anything", "n".repeat(129)))).status).toBe(400);
    expect((await fetch(pageOf("x".repeat(65), "report.txt"))).status).toBe(400);
    const doc = (await s.api("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/tasks"))).toEqual([]);
  });

  test("from the task page, Ctrl+click and middle click open the artifact's page in a new tab, signed in by the cookie alone: name, type, size, the file's bytes through Download", async () => {
    const id = await taskWith("Ship the report", { "report.txt": new TextEncoder().encode(REPORT) });
    await usePage(browser, async ({ page, context, problems }) => {
      await openSignedIn(page, `${s.url}/tasks/${id}`, w.owner.email, PASSWORD, "Sign in to see the task.");
      const link = page.locator("#artifacts").getByRole("link", { name: "report.txt" });
      for (const how of [{ modifiers: ["ControlOrMeta" as const] }, { button: "middle" as const }]) {
        const [tab] = await Promise.all([context.waitForEvent("page"), link.click(how)]);
        await tab.getByRole("heading", { name: "report.txt" }).waitFor();
        expect(tab.url()).toBe(pageOf(id, "report.txt"));
        await titled(tab, "report.txt · ao");
        await expect(tab.locator("#artifact-type").textContent()).resolves.toBe("text/plain; charset=utf-8");
        await expect(tab.locator("#artifact-size").textContent()).resolves.toBe(`${REPORT.length} bytes`);
        await expect(tab.locator("#artifact-task").textContent()).resolves.toBe("Ship the report");
        const saved = await download(tab);
        expect(saved.suggestedFilename()).toBe("report.txt");
        expect((await bytesOf(saved)).toString()).toBe(REPORT);
        // No image: no preview.
        await expect(tab.locator("main img").count()).resolves.toBe(0);
        await tab.close();
      }
      // The task page stayed where it was.
      expect(page.url()).toBe(`${s.url}/tasks/${id}`);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("opened by its address in another tab of a signed-in browser (the cookie alone), and back to the task from there", async () => {
    const id = await taskWith("Read the report", { "report.txt": new TextEncoder().encode(REPORT) });
    await usePage(browser, async ({ page, context, problems }) => {
      await openSignedIn(page, `${s.url}/tasks`, w.owner.email, PASSWORD, "Sign in to see the tasks.");
      const tab = await context.newPage();
      await tab.goto(pageOf(id, "report.txt"));
      await expect(tab.locator("#artifact-size").textContent()).resolves.toBe(`${REPORT.length} bytes`);
      expect((await bytesOf(await download(tab))).toString()).toBe(REPORT);
      await screenshot(tab, "artifact");
      await tab.locator("#artifact-back").click();
      await tab.getByRole("heading", { name: "Read the report" }).waitFor();
      expect(tab.url()).toBe(`${s.url}/tasks/${id}`);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("an image is previewed as the task page previews it, and downloads as its bytes", async () => {
    const id = await taskWith("Take a screenshot", { "screen-shot.png": PNG });
    await usePage(browser, async ({ page, problems }) => {
      await openSignedIn(page, pageOf(id, "screen-shot.png"), w.viewer.email, PASSWORD, "Sign in to see the artifact.");
      const img = page.getByRole("img", { name: "Preview of screen-shot.png" });
      await img.waitFor();
      // A function, not a string: a string predicate that needs polling is evaluated with eval, which the page's CSP forbids.
      await page.waitForFunction(() => (globalThis as any).document.querySelector(".artifact-preview img")?.naturalWidth === 1);
      await expect(img.getAttribute("src")).resolves.toStartWith("data:image/png;base64,");
      await expect(page.locator("#artifact-type").textContent()).resolves.toBe("image/png");
      await expect(page.locator("#artifact-size").textContent()).resolves.toBe(`${PNG.length} bytes`);
      const saved = await download(page);
      expect(saved.suggestedFilename()).toBe("screen-shot.png");
      expect(Buffer.compare(await bytesOf(saved), PNG)).toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("signed out: the sign-in form first, then the artifact", async () => {
    const id = await taskWith("Signed out", { "notes.md": new TextEncoder().encode("# Notes\n") });
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(pageOf(id, "notes.md"));
      await page.getByText("Sign in to see the artifact.").waitFor();
      await signInWithForm(page, w.member.email, PASSWORD);
      await page.getByRole("heading", { name: "notes.md" }).waitFor();
      await expect(page.locator("#artifact-type").textContent()).resolves.toBe("text/markdown; charset=utf-8");
      expect((await bytesOf(await download(page))).toString()).toBe("# Notes\n");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("an unknown artifact, an unknown task and another organization's task: not found, nothing of the other organization shown", async () => {
    const id = await taskWith("Has one file", { "report.txt": new TextEncoder().encode(REPORT) });
    const theirs = (await makeTask(s, w.other, w.otherProject.id, { title: "Their secret plan" })) as { id: string };
    await storeArtifact(s.core, w.other.orgId, theirs.id, "secret.txt", new TextEncoder().encode("secret"), 1);
    await usePage(browser, async ({ page, problems }) => {
      await openSignedIn(page, pageOf(id, "missing.txt"), w.owner.email, PASSWORD, "Sign in to see the artifact.");
      await page.getByRole("heading", { name: "Artifact not found" }).waitFor();
      // The API's own answer (404 not_found, "artifact not found"), as a sentence.
      await expect(shownText(page, "#missing-error")).resolves.toBe("Artifact not found.");
      await expect(shownText(page, "#missing-text")).resolves.toBe("The task Has one file has no artifact named missing.txt.");
      await page.getByRole("link", { name: "Back to Has one file" }).click();
      await page.getByRole("heading", { name: "Has one file" }).waitFor();

      for (const taskId of [theirs.id, "tsk_00000000000000000000000000"]) {
        await page.goto(pageOf(taskId, "secret.txt"));
        await page.getByRole("heading", { name: "Artifact not found" }).waitFor();
        await expect(shownText(page, "#missing-text")).resolves.toBe("There is no such task, or it is not in one of your organizations.");
        const body = (await page.locator("body").textContent()) ?? "";
        expect(body).not.toContain("Their secret plan");
      }
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a task of another of the person's organizations: found there, and that organization is the one in use", async () => {
    // The member of the main organization is also a viewer of the other one.
    const added = await s.api("POST", `/orgs/${w.other.orgId}/members`, { token: w.other.accessToken, body: { email: w.member.email, role: "viewer" } });
    expect(added.status).toBe(201);
    const theirs = (await makeTask(s, w.other, w.otherProject.id, { title: "In the other org" })) as { id: string };
    await storeArtifact(s.core, w.other.orgId, theirs.id, "build.log", new TextEncoder().encode("ok\n"), 1);
    await usePage(browser, async ({ page, problems }) => {
      await openSignedIn(page, `${s.url}/tasks`, w.member.email, PASSWORD, "Sign in to see the tasks.");
      // The main organization in use: the task is looked for there first, then in the other.
      await page.locator("#org-switch").selectOption(w.owner.orgId);
      await page.goto(pageOf(theirs.id, "build.log"));
      await page.getByRole("heading", { name: "build.log" }).waitFor();
      await page.waitForFunction((id) => (globalThis as any).document.querySelector("#org-switch")?.value === id, w.other.orgId);
      expect((await bytesOf(await download(page))).toString()).toBe("ok\n");
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
