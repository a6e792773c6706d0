// The New task form of the tasks list "/tasks" (SPEC §5, §11): a task and a review made and
// opened on their page, the project a filtered list names, the API's refusals shown beside their
// fields, and what an organization without projects is told.
import { expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import type { World } from "../tasks/fixtures";
import { tasksKit } from "./tasks-fixtures";
import { describeBrowser, screenshot, shownText, usePage, worldSuite } from "./browser";

describeBrowser("web: New task", () => {
  let s: TestServer;
  let browser: Browser;
  let w: World;
  worldSuite((up) => ({ s, browser, w } = up));
  const { freshOrg, listed, openList, rowsAre, openForm } = tasksKit(() => ({ s, w }));

  test("New task: a task and a review (base and head) are created and open on their page", async () => {
    const { org, as, projects } = await freshOrg(["api", "web"]);
    await usePage(browser, async ({ page, problems }) => {
      await openList(page, `?org=${org.id}`);
      await expect(shownText(page, "#tasks-empty")).resolves.toBe("No tasks in this organization yet. Create the first one with New task: an agent on one of your workers picks it up.");
      const form = page.locator("#new-task");
      await openForm(page);
      await expect(form.locator("#new-review-group").isHidden()).resolves.toBe(true);
      await form.getByLabel("Project").selectOption({ label: "web" });
      await form.getByLabel("Title").fill("Fix the cart");
      await form.getByLabel("Prompt").fill("The cart loses items.\nOn reload.");
      await form.getByLabel("Priority").selectOption("HIGH");
      await form.getByRole("button", { name: "Create task" }).click();
      await page.getByRole("heading", { name: "Fix the cart" }).waitFor();
      const [made] = await listed(as);
      expect(page.url()).toBe(`${s.url}/tasks/${made!.id}`);
      expect(made).toMatchObject({ title: "Fix the cart", prompt: "The cart loses items.\nOn reload.", priority: "HIGH", kind: "task", projectId: projects[1]!.id });
      // The task page links back to its organization's list.
      await page.locator("#task-org").click();
      await page.waitForURL(`${s.url}/tasks?org=${org.id}`);
      await rowsAre(page, [made!.id]);

      // The c key opens the form too.
      await page.keyboard.press("c");
      await form.getByLabel("Project").selectOption({ label: "api" });
      await form.getByLabel("Kind").selectOption("review");
      await form.getByLabel("Title").fill("Review the cart fix");
      await form.getByLabel("Prompt").fill("Look for races.");
      await form.getByLabel("Base").fill("main");
      await form.getByLabel("Head").fill("fix-cart");
      await screenshot(page, "tasks-new-review");
      await form.getByRole("button", { name: "Create task" }).click();
      await page.getByRole("heading", { name: "Review the cart fix" }).waitFor();
      const [review] = await listed(as);
      expect(review).toMatchObject({ kind: "review", review: { base: "main", head: "fix-cart" }, priority: "MEDIUM", projectId: projects[0]!.id });
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("New task on a list filtered by a project makes the task there; an archived project's list offers the first live one", async () => {
    // Listed newest first: the filtered project is the last one offered.
    const { org, as, projects } = await freshOrg(["filtered", "newer", "archived"]);
    const [filtered, newer, archived] = [projects[0]!, projects[1]!, projects[2]!];
    expect((await s.api("DELETE", `/orgs/${org.id}/projects/${archived.id}`, { token: as.accessToken })).status).toBeLessThan(300);
    await usePage(browser, async ({ page, problems }) => {
      const form = page.locator("#new-task");
      const options = () => form.getByLabel("Project").locator("option").evaluateAll((os) => os.map((o) => o.getAttribute("value")));
      await openList(page, `?org=${org.id}&projectId=${filtered.id}`);
      await openForm(page);
      await expect(options()).resolves.toEqual([newer.id, filtered.id]);
      await expect(form.getByLabel("Project").inputValue()).resolves.toBe(filtered.id);
      await form.getByLabel("Title").fill("In the filtered project");
      await form.getByLabel("Prompt").fill("p");
      await form.getByRole("button", { name: "Create task" }).click();
      await page.getByRole("heading", { name: "In the filtered project" }).waitFor();
      expect((await listed(as))[0]).toMatchObject({ title: "In the filtered project", projectId: filtered.id });

      await page.goto(`${s.url}/tasks?org=${org.id}&projectId=${archived.id}`);
      await page.locator("#tasks-empty").waitFor();
      await openForm(page);
      await expect(form.getByLabel("Project").inputValue()).resolves.toBe(newer.id);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("New task refused: a title that is not one line shows the API's message; a viewer gets the 403; nothing is created", async () => {
    const before = (await listed(w.owner)).length;
    await usePage(browser, async ({ page, problems }) => {
      await openList(page, `?org=${w.owner.orgId}`);
      const form = page.locator("#new-task");
      await openForm(page);
      await form.getByLabel("Title").fill("Fix\tthe cart");
      await form.getByLabel("Prompt").fill("p");
      await form.getByRole("button", { name: "Create task" }).click();
      // The API's complaint shows beside the field it concerns.
      await expect(shownText(page, "#new-title-error")).resolves.toBe("must be one line of text: no control characters (newlines, tabs, escapes), not only spaces");
      await expect(page.locator("#new-task-error").count()).resolves.toBe(0);
      await expect(form.getByRole("button", { name: "Create task" }).isEnabled()).resolves.toBe(true);
      // A review without its base and head: each complaint beside its field, and the title's gone.
      await form.getByLabel("Title").fill("Review the cart");
      await form.getByLabel("Kind").selectOption("review");
      await form.getByRole("button", { name: "Create task" }).click();
      await page.locator("#new-base-error").waitFor();
      await expect(shownText(page, "#new-head-error")).resolves.toBeTruthy();
      await expect(page.locator("#new-title-error").count()).resolves.toBe(0);
      await expect(page.locator("#new-task-error").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
    await usePage(browser, async ({ page }) => {
      await openList(page, `?org=${w.owner.orgId}`, w.viewer);
      await openForm(page);
      await expect(shownText(page, "#new-task-viewer")).resolves.toContain("viewer");
      const form = page.locator("#new-task");
      await form.getByLabel("Title").fill("From a viewer");
      await form.getByLabel("Prompt").fill("p");
      await form.getByRole("button", { name: "Create task" }).click();
      await expect(shownText(page, "#new-task-error")).resolves.toBe("Your role (viewer) lacks the permission task.create.");
    });
    expect((await listed(w.owner)).length).toBe(before);
  }, 90_000);

  test("an organization without projects points to /projects (not to curl); the form says a project comes first", async () => {
    const { org } = await freshOrg([]);
    await usePage(browser, async ({ page, problems }) => {
      await openList(page, `?org=${org.id}`);
      await expect(shownText(page, "#tasks-empty")).resolves.toBe("No tasks yet. Every task belongs to a project: create a project first.");
      await expect(page.locator("#tasks-empty a").getAttribute("href")).resolves.toBe("/projects");
      await expect(page.locator("main").textContent()).resolves.not.toContain("curl");
      await openForm(page);
      await expect(shownText(page, "#new-task-no-projects")).resolves.toContain("Make a project first");
      await expect(page.locator("#new-task-form").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
