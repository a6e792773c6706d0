// The task page of a review task (SPEC §5, §11; README "Connect GitHub"): its range, its result
// (the summary, the review's files) and, once the review is posted on the pull request it came
// from, a link to that review, shown live; a failed review says why.
import { expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { makeProject, makeTask, putInState, type World } from "../tasks/fixtures";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { changeTask } from "../../src/modules/tasks/store";
import { describeBrowser, openTaskPage, usePage, worldSuite } from "./browser";

const PASSWORD = "correct horse battery staple";
const REVIEW = { base: "main", head: "feature/orders" };

describeBrowser("web: a review task on the task page", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));

  // A project with a repository (a review needs one), made once.
  let reviewed: Promise<{ id: string }> | undefined;
  const review = async (title: string) => {
    reviewed ??= makeProject(s, w.owner, "reviewed", { repositories: [{ url: "https://example.com/acme/orders.git" }] });
    return ((await makeTask(s, w.owner, (await reviewed).id, { title, kind: "review", review: REVIEW })) as { id: string }).id;
  };

  test("completed: its range, summary and report; the review it posted on the pull request links there as soon as it is posted", async () => {
    const id = await review("Review the orders branch");
    await storeArtifact(s.core, w.owner.orgId, id, "review.md", new TextEncoder().encode("# Review\n\n- line 3: off by one\n"), 1);
    await putInState(s, id, "completed", { attempt: 1, summary: "One nit: off by one on line 3." });
    await usePage(browser, async ({ page, problems }) => {
      await openTaskPage(page, `${s.url}/tasks/${id}`, w.member, PASSWORD, "Review the orders branch");
      await expect(page.locator("#task-facts").textContent()).resolves.toContain("Reviewmain → feature/orders");
      await expect(page.locator("#task-summary").textContent()).resolves.toBe("One nit: off by one on line 3.");
      await page.locator("#artifacts", { hasText: "review.md" }).waitFor();
      // No diff and no pull request yet: no changes to show.
      await expect(page.locator("#changes").count()).resolves.toBe(0);

      // The review is posted (the GitHub app's queue writes the pull request it reviewed).
      const pr = { number: 7, url: "https://github.com/acme/shop/pull/7", state: "open", headBranch: "feature/orders", repository: "acme/shop", reviewUrl: "https://github.com/acme/shop/pull/7#pullrequestreview-42" };
      await changeTask(s.core, w.owner.orgId, id, () => ({
        patch: { pull_request: JSON.stringify(pr) },
        events: [{ type: "review", data: { action: "posted", number: 7, url: pr.reviewUrl } }],
      }));
      const line = page.locator("#pull-request");
      await line.getByRole("link", { name: "the review" }).waitFor();
      await expect(line.textContent()).resolves.toBe("Reviewed pull request #7 open from feature/orders · the review");
      await expect(line.getByRole("link", { name: "the review" }).getAttribute("href")).resolves.toBe(pr.reviewUrl);
      await expect(line.getByRole("link", { name: "#7" }).getAttribute("href")).resolves.toBe(pr.url);
      await expect(page.locator("#changes h2").textContent()).resolves.toBe("Pull request");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("failed: the status, the summary and the error that ended it", async () => {
    const id = await review("Review a branch that does not build");
    await changeTask(s.core, w.owner.orgId, id, () => ({
      patch: { status: "failed", attempt: 1, summary: "The diff does not build.", finished_at: new Date().toISOString() },
      events: [{ type: "error", data: { message: "the agent exited with code 2", attempt: 1 } }],
    }));
    await usePage(browser, async ({ page, problems }) => {
      await openTaskPage(page, `${s.url}/tasks/${id}`, w.member, PASSWORD, "Review a branch that does not build");
      await page.locator("#task-status", { hasText: /^failed/ }).waitFor();
      await expect(page.locator("#task-summary").textContent()).resolves.toBe("The diff does not build.");
      await page.locator("#timeline", { hasText: "the agent exited with code 2" }).waitFor();
      await expect(page.locator("#changes").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
