// The administration page "/admin" (instance administrators: the users, creating one) and the
// GitHub page "/github" where the server has no code-hosting app yet; every management page at
// a phone's width without a console error, a CSP violation or anything sticking out sideways.
import { describe, expect, test } from "bun:test";
import { CONTENT_SECURITY_POLICY, contentSecurityPolicy } from "../../src/web";
import { pagePolicy } from "../../src/modules/web";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, login, type Session } from "../helpers/identity";
import { PHONE, describeBrowser, openSignedIn, overflowsSideways, shownText, webSuite } from "./browser";
import { MANAGE_TEST_MS, PASSWORD, manageSteps, openAs } from "./manage-fixtures";

describeBrowser("web: admin and GitHub pages, every management page on a phone", () => {
  let s: TestServer;
  let browser: Browser;
  const steps = manageSteps(() => browser);
  let admin: Session;
  webSuite(async (up) => {
    ({ s, browser } = up);
    admin = await createAdmin(s);
  });

  test("an administrator sees the users and creates one, who can then sign in; a bad email is explained beside the field", async () => {
    await steps(async ({ page, problems }) => {
      await openSignedIn(page, `${s.url}/admin`, admin.email, PASSWORD, "Sign in to administer this server.");
      await page.locator("#users-table tbody tr", { hasText: admin.email }).waitFor();
      const form = page.locator("#user-form");
      await form.getByLabel("Email").fill("not-an-email");
      await form.getByLabel("Initial password").fill("long enough password");
      // The browser's own check is not what refuses it: the API does, and says which field.
      await form.evaluate((f) => ((f as any).noValidate = true));
      await form.getByRole("button", { name: "Create user" }).click();
      await expect(shownText(page, "#user-email-error")).resolves.not.toBe("");
      await form.getByLabel("Email").fill("new.hire@example.test");
      await form.getByLabel("Name").fill("New Hire");
      await form.getByRole("button", { name: "Create user" }).click();
      await page.locator("#users-table tbody tr", { hasText: "new.hire@example.test" }).waitFor();
      const signedIn = await login(s, "new.hire@example.test", "long enough password");
      expect((await s.api("GET", "/me", { token: signedIn.accessToken })).body).toMatchObject({ name: "New Hire", isAdmin: false });
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("someone who is not an instance administrator is told the page is not for them (and the API agrees)", async () => {
    const owner = await addMember(s, admin, "owner");
    expect((await s.api("GET", "/admin/users", { token: owner.accessToken })).status).toBe(403);
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/admin`);
      await page.getByText("Only instance administrators manage this server's users.").waitFor();
      await expect(page.locator("#users-table").count()).resolves.toBe(0);
      await expect(page.locator("#user-form").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the GitHub page says when this server has no GitHub support", async () => {
    const codehost = await s.api("GET", `/orgs/${admin.orgId}/codehost`, { token: admin.accessToken });
    if (codehost.status !== 404) return; // With the code-hosting app, test/web/github.test.ts covers the page.
    await steps(async ({ page, problems }) => {
      await openAs(s, page, admin, `/github`);
      await page.locator("#github-unavailable").waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("every management page on a phone: no console error or CSP violation, nothing wider than the screen", async () => {
    // Each page with what shows once its data is in.
    const pages: [string, string][] = [
      ["/projects", "#projects-list li"],
      ["/workers", "#workers-empty"],
      ["/integrations", "#integrations-empty"],
      ["/github", "#github-page section, #github-unavailable"],
      ["/settings", "#members-table tbody tr"],
      ["/account", "#tokens-empty"],
      ["/admin", "#users-table tbody tr"],
    ];
    const project = (await s.api("POST", `/orgs/${admin.orgId}/projects`, { token: admin.accessToken, body: { name: "phone", repositories: [{ url: "https://git.example.com/a/very-long-repository-name-that-could-overflow.git" }] } })).body;
    pages.push([`/projects/${project.id}`, ".repository"]);
    await steps(
      async ({ page, problems }) => {
        await openAs(s, page, admin, `/projects`);
        for (const [path, shown] of pages) {
          await page.goto(`${s.url}${path}`);
          await page.locator(shown).first().waitFor();
          expect({ path, overflows: await overflowsSideways(page) }).toEqual({ path, overflows: false });
        }
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, MANAGE_TEST_MS);
});

describe("the pages' policy lets the GitHub page post the app manifest to the code-hosting service only", () => {
  test("form-action names this server and the configured GitHub origin, nothing else; no GitHub config: this server only", () => {
    expect(pagePolicy({ github: { url: "https://ghe.example.com/" } })).toContain("form-action 'self' https://ghe.example.com;");
    expect(pagePolicy({ github: { url: "https://github.com" } })).toBe(contentSecurityPolicy(["https://github.com"]));
    expect(pagePolicy({})).toBe(CONTENT_SECURITY_POLICY);
    expect(pagePolicy({ github: { url: "not a url" } })).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toContain("form-action 'self';");
  });
});
