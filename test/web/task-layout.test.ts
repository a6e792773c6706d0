// The task page's layout, measured in a real browser: on a phone (and in a window up to 1000 px
// wide) the status and the question come first and the answer box right after them, a long
// prompt after the actions; on a desktop the actions stand beside the task. A 200-character
// title without a space wraps instead of pushing the page sideways, and the facts keep a gap
// between each label and its value. A big diff is left for download; a cost not reported yet says so.
import { expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { makeTask, putInState, type World } from "../tasks/fixtures";
import { DESKTOP, PHONE, describeBrowser, openSignedIn, overflowsSideways, screenshot, shownText, usePage, worldSuite } from "./browser";
import { recordUsage } from "../../src/modules/usage/service";
import { storeArtifact } from "../../src/modules/tasks/artifacts";

const PASSWORD = "correct horse battery staple";
/** A common phone (390 x 844). */
const PHONE_390 = { width: 390, height: 844 };

/** The viewport-relative box of the first element matching `selector`. */
const box = (page: Page, selector: string) =>
  page.locator(selector).first().evaluate((e) => {
    const r = e.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
  });

describeBrowser("web: the task page's layout", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  /** A task waiting for an answer to its question, with a summary so far. */
  async function waitingTask(title: string, prompt?: string) {
    const t = (await makeTask(s, w.owner, w.project.id, { title, ...(prompt ? { prompt } : {}) })) as { id: string };
    await putInState(s, t.id, "needs_input", { worker_id: null, summary: "Two colours would fit.", needs: JSON.stringify({ kind: "input", message: "Which colour should the button be?" }) });
    return t.id;
  }
  /** Opens the task's page signed in as its owner, once it shows the question and is live. */
  async function open(page: Page, id: string) {
    await openSignedIn(page, `${s.url}/tasks/${id}`, w.owner.email, PASSWORD);
    await page.locator("#task-needs-message").waitFor();
    await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
  }

  for (const viewport of [PHONE, { width: 1000, height: 800 }]) {
    test(`${viewport.width} px wide: the status, the question and the summary first, then the answer box and the actions, then the facts and the session`, async () => {
      const id = await waitingTask("Pick a colour");
      await usePage(
        browser,
        async ({ page, problems }) => {
          await open(page, id);
          const status = await box(page, "#task-status");
          const question = await box(page, "#task-needs");
          const summary = await box(page, "#task-summary");
          const answer = await box(page, "#action-input");
          const facts = await box(page, "#task-facts");
          const session = await box(page, "#timeline-card");
          expect(status.bottom).toBeLessThanOrEqual(question.top);
          expect(question.bottom).toBeLessThanOrEqual(summary.top);
          expect(summary.bottom).toBeLessThan(answer.top);
          expect(answer.bottom).toBeLessThan(facts.top);
          expect(facts.bottom).toBeLessThan(session.top);
          // Read in the same order (a screen reader, the Tab key): the answer box right after the question.
          const order = await page.evaluate(() => {
            const doc = (globalThis as any).document;
            const ids = ["task-status", "task-needs", "action-input", "task-facts", "timeline-card"];
            const all = [...doc.querySelectorAll("main *")];
            return ids.map((i) => all.indexOf(doc.getElementById(i)));
          });
          expect(order).toEqual([...order].sort((a, b) => a - b));
          await screenshot(page, `task-layout-${viewport.width}`);
          expect(problems).toEqual([]);
        },
        viewport,
      );
    }, 90_000);
  }

  test("390 px wide, a long prompt: the answer box comes right after the question and the summary; the prompt follows the actions", async () => {
    const prompt = Array.from({ length: 60 }, (_, i) => `${i + 1}. Check the button's colour against the brand guide, page ${i + 1}.`).join("\n");
    const id = await waitingTask("Pick a colour for the long brief", prompt);
    await usePage(
      browser,
      async ({ page, problems }) => {
        await open(page, id);
        const question = await box(page, "#task-needs");
        const summary = await box(page, "#task-summary");
        const answer = await box(page, "#action-input");
        const buttons = await box(page, "#action-buttons");
        const shownPrompt = await box(page, "#task-prompt");
        expect(question.bottom).toBeLessThanOrEqual(summary.top);
        expect(summary.bottom).toBeLessThan(answer.top);
        // Only the summary, the card's edge and the answer's label between them, not the prompt
        // (over 300 px tall alone): the question and the whole answer box fit in half the screen.
        expect(shownPrompt.bottom - shownPrompt.top).toBeGreaterThan(300);
        expect(answer.bottom - question.top).toBeLessThan(PHONE_390.height / 2);
        expect(buttons.bottom).toBeLessThan(shownPrompt.top);
        // The same order for a screen reader and the Tab key.
        const order = await page.evaluate(() => {
          const doc = (globalThis as any).document;
          const all = [...doc.querySelectorAll("main *")];
          return ["task-needs", "action-input", "action-buttons", "task-prompt"].map((i) => all.indexOf(doc.getElementById(i)));
        });
        expect(order).toEqual([...order].sort((a, b) => a - b));
        expect(await overflowsSideways(page)).toBe(false);
        await screenshot(page, "task-layout-390-long-prompt");
        expect(problems).toEqual([]);
      },
      PHONE_390,
    );
  }, 90_000);

  test("on a desktop the actions and facts stand beside the task, level with its status; the prompt follows the task and the session the prompt", async () => {
    const id = await waitingTask("Pick a shade");
    await usePage(
      browser,
      async ({ page, problems }) => {
        await open(page, id);
        const head = await box(page, ".card:has(#task-status)");
        const actions = await box(page, "#actions");
        const prompt = await box(page, "#prompt-card");
        const session = await box(page, "#timeline-card");
        const side = await box(page, ".task-side");
        expect(actions.left).toBeGreaterThan(head.right);
        expect(Math.abs(actions.top - head.top)).toBeLessThan(1);
        expect(prompt.right).toBeLessThan(actions.left);
        expect(session.right).toBeLessThan(actions.left);
        // Each right below the one before (the grid's gap), though the side column reaches further down.
        expect(side.bottom).toBeGreaterThan(session.top);
        expect(prompt.top - head.bottom).toBeLessThan(20);
        expect(session.top - prompt.bottom).toBeLessThan(20);
        await screenshot(page, "task-layout-desktop");
        expect(problems).toEqual([]);
      },
      DESKTOP,
    );
  }, 90_000);

  test("on a phone a 200-character title without a space wraps: the page is no wider than the screen", async () => {
    const title = "Rename".padEnd(200, "_x");
    const id = await waitingTask(title);
    await usePage(
      browser,
      async ({ page, problems }) => {
        await open(page, id);
        await expect(page.locator("#task-title").textContent()).resolves.toBe(title);
        expect(await overflowsSideways(page)).toBe(false);
        const heading = await box(page, "#task-title");
        expect(heading.right).toBeLessThanOrEqual(PHONE.width);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, 90_000);

  test("a diff longer than the page draws (4,000 lines) is left for download instead of freezing the tab", async () => {
    const id = await waitingTask("A big change");
    const attempt = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}`, { token: w.owner.accessToken })).body.attempt;
    const lines = ["diff --git a/big.ts b/big.ts", "--- a/big.ts", "+++ b/big.ts", "@@ -1,2000 +1,2000 @@"];
    for (let i = 0; i < 2000; i++) lines.push(`-const v${i} = old(${i});`);
    for (let i = 0; i < 2000; i++) lines.push(`+const v${i} = new(${i});`);
    await storeArtifact(s.core, w.owner.orgId, id, "changes.diff", new TextEncoder().encode(lines.join("\n")), attempt);
    await usePage(browser, async ({ page, problems }) => {
      await open(page, id);
      await page.locator("#diff-too-large").waitFor();
      await expect(page.locator("#diff").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a running Claude task's cost, reported only at its end, reads not reported yet (not $0.0000); then the cost reported", async () => {
    const t = (await makeTask(s, w.owner, w.project.id, { title: "Costs later" })) as { id: string };
    await putInState(s, t.id, "running");
    const usage = (costUsd: number) => ({ inputTokens: 1200, outputTokens: 300, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd, model: "claude-sonnet" });
    await s.core.store.write(recordUsage(s.core, t.id, usage(0), () => {}));
    await usePage(browser, async ({ page, problems }) => {
      await openSignedIn(page, `${s.url}/tasks/${t.id}`, w.owner.email, PASSWORD);
      await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
      await expect(shownText(page, "#task-usage")).resolves.toBe("1200 in, 300 out · claude-sonnet");
      await expect(shownText(page, "#task-cost")).resolves.toBe("not reported yet");
      await s.core.store.write(recordUsage(s.core, t.id, usage(0.0421), () => {}));
      await putInState(s, t.id, "completed");
      await page.locator("#task-cost", { hasText: /^\$0\.0421$/ }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("on a phone each fact's label and value keep a gap between them", async () => {
    const id = await waitingTask("Mind the gap");
    await usePage(
      browser,
      async ({ page, problems }) => {
        await open(page, id);
        const gaps = await page.locator("#task-facts dt").evaluateAll((dts) =>
          dts.map((dt) => [dt.textContent, dt.nextElementSibling!.getBoundingClientRect().left - dt.getBoundingClientRect().right]),
        );
        expect(gaps.map(([label]) => label)).toContain("Updated");
        for (const [label, gap] of gaps) expect([label, (gap as number) >= 8]).toEqual([label, true]);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, 90_000);
});
