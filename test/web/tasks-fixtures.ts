// What the tasks list's browser tests share (tasks.test.ts, tasks-new.test.ts): organizations of
// their own with projects, the API's view of their tasks, and the list opened signed in.
import type { Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import type { Session } from "../helpers/identity";
import { makeProject, type World } from "../tasks/fixtures";
import { signInWithForm } from "./browser";

export const PASSWORD = "correct horse battery staple";
export type Task = { id: string; projectId: string; title: string; status: string; kind: string; review: { base: string; head: string } | null; priority: string; prompt: string };

/** The helpers, given the suite's server and world once they are up. */
export function tasksKit(up: () => { s: TestServer; w: World }) {
  let n = 0;
  /** A new organization of `who` (the owner by default) with projects named `projects`, each with a repository (a review needs one). */
  async function freshOrg(projects: string[], who?: Session) {
    const { s, w } = up();
    const owner = who ?? w.owner;
    const org = (await s.api("POST", "/orgs", { token: owner.accessToken, body: { name: `tasks-${++n}` } })).body as { id: string; name: string };
    const as = { orgId: org.id, accessToken: owner.accessToken };
    const made: { id: string; name: string }[] = [];
    for (const name of projects) made.push(await makeProject(s, as, name, { repositories: [{ url: `https://example.com/acme/${encodeURIComponent(name)}.git` }] }));
    return { org, as, projects: made };
  }
  const listed = async (as: { orgId: string; accessToken: string }, query = "") =>
    (await up().s.api("GET", `/orgs/${as.orgId}/tasks?limit=200${query}`, { token: as.accessToken })).body.items as Task[];
  async function openList(page: Page, query: string, who?: Session) {
    const { s, w } = up();
    const person = who ?? w.owner;
    await page.goto(`${s.url}/tasks${query}`);
    await page.getByText("Sign in to see the tasks.").waitFor();
    await signInWithForm(page, person.email, PASSWORD);
    await page.locator("#live-state", { hasText: /^live$/ }).waitFor();
  }
  /** Waits until the rows are exactly `ids`, in that order. */
  const rowsAre = (page: Page, ids: string[]) =>
    page.waitForFunction(
      // Runs in the page (the root tsconfig has no DOM types; the CSP forbids a string to evaluate).
      (want) => JSON.stringify([...(globalThis as any).document.querySelectorAll("#tasks-rows tr")].map((tr) => tr.getAttribute("data-id"))) === want,
      JSON.stringify(ids),
    );
  /** Opens the New task form (the button beside the title). */
  const openForm = (page: Page) => page.locator("#new-task-open").click();
  return { freshOrg, listed, openList, rowsAre, openForm };
}
