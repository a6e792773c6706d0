// The GitHub page "/github" (SPEC §10, §11) against the GitHub stand-in: create the app through the
// manifest flow in the browser (the page posts the manifest form to GitHub, which sends the
// browser back), install it on an organization, sync, see the synced repositories and pick one
// for a project, create a repository with its project; a member sees no app buttons. A project's
// page with the repository form's GitHub part is the README's screenshot of a project.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, type Session } from "../helpers/identity";
import { join } from "node:path";
import { DESKTOP, describeBrowser, docsScreenshot, openSignedIn, webSuite } from "./browser";
import { MANAGE_TEST_MS, PASSWORD, manageSteps, openAs } from "./manage-fixtures";

const STANDIN = join(import.meta.dir, "..", "helpers", "github-standin.ts");

/** The parts of the stand-in (test/helpers/github-standin.ts) these tests use. */
interface GitHubStandIn {
  url: string;
  apiUrl: string;
  signIn(login: string): unknown;
  app(slug: string): { manifest: { redirect_url: string } };
  install(slug: string, account: string, opts: { type: "Organization"; repositories: number }): Promise<{ setupRedirect: string | null }>;
  createRepository(owner: string, name: string): unknown;
  repository(owner: string, name: string): unknown;
  close(): Promise<void>;
}

describeBrowser("web: GitHub page", () => {
  let s: TestServer;
  let gh: GitHubStandIn;
  let browser: Browser;
  const steps = manageSteps(() => browser);
  let owner: Session;
  beforeAll(async () => {
    gh = await ((await import(STANDIN)) as { startGitHubStandIn(): Promise<GitHubStandIn> }).startGitHubStandIn();
    gh.signIn("octo-admin");
  });
  afterAll(async () => {
    await gh?.close();
  });
  webSuite(
    async (up) => {
      ({ s, browser } = up);
      owner = await createAdmin(s);
    },
    // The server's GitHub is the stand-in, started just before.
    { server: () => ({ github: { url: gh.url, apiUrl: gh.apiUrl, retryBaseMs: 300, maxTries: 6 } }) },
  );
  const status = async () => (await s.api("GET", `/orgs/${owner.orgId}/codehost`, { token: owner.accessToken })).body;

  test("create the app in the browser: the manifest form goes to GitHub (the page's policy allows it) and GitHub sends the browser back", async () => {
    await steps(async ({ page, problems }) => {
      await openSignedIn(page, `${s.url}/github`, owner.email, PASSWORD, "Sign in to connect GitHub.");
      await page.locator("#app-form").getByLabel("App name").fill("ao web test");
      await page.locator("#app-form").getByRole("button", { name: "Create the GitHub app" }).click();
      await page.waitForURL((u) => u.pathname === "/github" && u.searchParams.has("app"));
      await page.locator("#github-outcome", { hasText: "was created" }).waitFor();
      await page.locator("#app-link", { hasText: "ao web test" }).waitFor();
      expect((await status()).app).toMatchObject({ name: "ao web test", ownedByThisOrg: true });
      expect(gh.app("ao-web-test").manifest.redirect_url).toBe(`${s.url}/api/v1/codehost/app/callback`);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("install on an organization, then sync: the synced repositories list follows", async () => {
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/github`);
      // Declined at GitHub first: GitHub sends the browser back with error=access_denied.
      await page.goto(`${s.url}/api/v1/codehost/user/callback?error=access_denied&error_description=denied&state=x`);
      await page.locator("#github-outcome", { hasText: "the authorization was declined at GitHub" }).waitFor();
      await expect(page.locator("#github-outcome").getAttribute("role")).resolves.toBe("alert");
      // The setup callback checks the installation against the person's own connection: connect first.
      await page.getByRole("button", { name: "Connect your GitHub account" }).click();
      await page.waitForURL((u) => u.pathname === "/github" && u.searchParams.get("connection") === "octo-admin");
      await page.locator("#connection-login", { hasText: "octo-admin" }).waitFor();
      await page.getByRole("button", { name: "Install on GitHub" }).click();
      await page.waitForURL((u) => u.href.startsWith(`${gh.url}/apps/`));
      const done = await gh.install("ao-web-test", "acme", { type: "Organization", repositories: 3 });
      await page.goto(done.setupRedirect!);
      await page.locator("#github-outcome", { hasText: "installed" }).waitFor();
      await page.locator("#installations-list li", { hasText: "acme" }).getByText("3 synced").waitFor();
      expect(problems).toEqual([]);
    });
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/github`);
      gh.createRepository("acme", "zz-new");
      await page.getByRole("button", { name: "Sync" }).click();
      await page.getByText("Synced: 4 repositories.").waitFor();
      // The list loads again after a sync: the new repository is there, with a way to start a project.
      // (Starting one is not clicked here: the stand-in's clone URLs are http on loopback, which the
      // project URL rules refuse; GitHub's are https.)
      await page.locator("#synced-list li", { hasText: "acme/zz-new" }).getByRole("button", { name: "New project" }).waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("create a repository at GitHub with a project holding it; a member sees the app but no app buttons", async () => {
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/github`);
      const form = page.locator("#repository-create-form");
      await form.getByLabel("Owner").fill("acme");
      await form.getByLabel("Repository name").fill("made-by-ao");
      await form.getByRole("button", { name: "Create repository and project" }).click();
      await page.waitForURL(/\/projects\/prj_/);
      await page.locator(".repository .repo-name", { hasText: "made-by-ao" }).waitFor();
      expect(gh.repository("acme", "made-by-ao")).toBeDefined();
      await page.goto(`${s.url}/github`);
      await page.locator("#installations-list li").first().waitFor();
      await docsScreenshot(page, "github");
      expect(problems).toEqual([]);
    }, DESKTOP);
    const member = await addMember(s, owner, "member");
    await steps(async ({ page, problems }) => {
      await openAs(s, page, member, `/github`);
      await page.locator("#app-link").waitFor();
      for (const name of ["Install on GitHub", "Sync"]) await expect(page.getByRole("button", { name }).count()).resolves.toBe(0);
      await page.getByRole("button", { name: "Connect your GitHub account" }).waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);
  // The README's picture of a project: this suite's server has the GitHub app, so the page shows
  // the repository form's GitHub part (a server without the app hides it).
  test("a project's page: its repositories, added by URL or picked from GitHub's synced ones (the README's screenshot)", async () => {
    for (const name of ["shop-mobile", "storefront-api"]) gh.createRepository("acme", name);
    expect((await s.api("POST", `/orgs/${owner.orgId}/codehost/sync`, { token: owner.accessToken })).status).toBe(200);
    const made = await s.api("POST", `/orgs/${owner.orgId}/projects`, {
      token: owner.accessToken,
      body: {
        name: "shop",
        repositories: [{ url: "https://github.com/acme/shop.git" }, { url: "https://github.com/acme/shop-infra.git", branch: "release" }],
        knowledge: "A Bun + Preact storefront. Run `bun test` before pushing; never touch migrations/ by hand.",
        policy: { agent: { allow: ["shell:bun test*", "shell:bun run lint"], ask: ["network", "shell:git push*"], default: "ask" }, budget: { perTaskUsd: 5, perDayUsd: 50 }, pullRequests: "draft", preferredAgent: "claude" },
      },
    });
    expect(made.status).toBe(201);
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${made.body.id}`);
      await page.locator(".repository .repo-name", { hasText: "shop-infra" }).waitFor();
      await page.locator("#from-github li", { hasText: "acme/storefront-api" }).getByRole("button", { name: "Add" }).waitFor();
      // Beside the taller list, the URL form keeps its button right below its fields.
      const [fields, button] = await Promise.all(
        ["#repo-url-hint", "#repository-form button[type=submit]"].map((sel) => page.locator(sel).evaluate((e) => e.getBoundingClientRect().toJSON())),
      );
      expect(button.top - fields.bottom).toBeLessThan(40);
      await docsScreenshot(page, "project");
      expect(problems).toEqual([]);
    }, DESKTOP);
  }, MANAGE_TEST_MS);
});
