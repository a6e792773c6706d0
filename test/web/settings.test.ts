// The settings page "/settings" (SPEC §3, §11): the organization's name and worker-approval rule,
// members: add an existing person by email (an unknown email is explained beside the field),
// change a role, remove; an admin cannot touch the owner role; a viewer only reads.
import { expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, login, newOrg, type Session } from "../helpers/identity";
import { DESKTOP, PHONE, describeBrowser, docsScreenshot, openSignedIn, overflowsSideways, shownText, webSuite } from "./browser";
import { MANAGE_TEST_MS, PASSWORD, manageSteps, openAs } from "./manage-fixtures";

describeBrowser("web: settings page", () => {
  let s: TestServer;
  let browser: Browser;
  const steps = manageSteps(() => browser);
  let admin: Session;
  webSuite(async (up) => {
    ({ s, browser } = up);
    admin = await createAdmin(s);
  });

  /** Signed in through the form (the first test), or already (the others). */
  const openWithForm = (page: Page, who: Session) => openSignedIn(page, `${s.url}/settings`, who.email, PASSWORD, "Sign in to see the organization's settings.");
  const open = (page: Page, who: Session) => openAs(s, page, who, "/settings");
  const row = (page: Page, email: string) => page.locator(`#members-table tbody tr[data-email="${email}"]`);
  const members = async (o: Session) =>
    Object.fromEntries(((await s.api("GET", `/orgs/${o.orgId}/members`, { token: o.accessToken })).body.items as { email: string; role: string }[]).map((m) => [m.email, m.role]));
  /** A person with an account but in no org of `o`'s (made by the administrator). */
  async function stranger(): Promise<string> {
    const email = `new-${Math.random().toString(36).slice(2, 8)}@example.test`;
    expect((await s.api("POST", "/admin/users", { token: admin.accessToken, body: { email, password: PASSWORD } })).status).toBe(201);
    return email;
  }

  test("add a member by email, change their role, remove them; an unknown email is explained beside the field", async () => {
    const owner = await newOrg(s);
    const email = await stranger();
    await steps(async ({ page, problems }) => {
      await openWithForm(page, owner);
      await row(page, owner.email).waitFor();
      const form = page.locator("#invite-form");
      await form.getByLabel("Email").fill("nobody@example.test");
      await form.getByRole("button", { name: "Add member" }).click();
      await expect(shownText(page, "#org-email-error")).resolves.toContain("No account has this email");

      await form.getByLabel("Email").fill(email);
      await form.getByLabel("Role").selectOption("viewer");
      await form.getByRole("button", { name: "Add member" }).click();
      await row(page, email).waitFor();
      expect((await members(owner))[email]).toBe("viewer");

      const changed = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/members/"));
      await row(page, email).getByLabel(`Role of ${email}`).selectOption("admin");
      expect((await changed).status()).toBe(200);
      expect((await members(owner))[email]).toBe("admin");
      await page.reload();
      await expect(row(page, email).getByLabel(`Role of ${email}`).inputValue()).resolves.toBe("admin");

      await row(page, email).getByRole("button", { name: "Remove" }).click();
      // The row goes as soon as the answer is in; the removal is read back once it is.
      const removed = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().includes("/members/"));
      await page.getByRole("dialog").getByRole("button", { name: "Yes, remove" }).click();
      expect((await removed).status()).toBe(204);
      await row(page, email).waitFor({ state: "detached" });
      expect((await members(owner))[email]).toBeUndefined();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the organization's name and worker-approval rule are saved; the last owner cannot be demoted (the refusal shows on the row)", async () => {
    const owner = await newOrg(s);
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      await page.locator("#org-form").getByLabel("Organization name").fill("Acme Robotics");
      await page.locator("#org-form").getByRole("button", { name: "Rename" }).click();
      await page.locator("#org-form").getByText("Saved").waitFor();
      const saved = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().endsWith(`/orgs/${owner.orgId}`));
      await page.locator("#approval-rule input").check();
      expect((await saved).status()).toBe(200);
      expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken })).body.requireWorkerApproval).toBe(true);
      expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken })).body.name).toBe("Acme Robotics");
      // The sidebar's organization switcher has the new name too.
      await page.locator("select", { has: page.locator("option", { hasText: "Acme Robotics" }) }).first().waitFor();

      await row(page, owner.email).getByLabel(`Role of ${owner.email}`).selectOption("member");
      await expect(shownText(page, `#members-table tr[data-email="${owner.email}"] .field-error`)).resolves.toContain("last owner");
      await expect(row(page, owner.email).getByLabel(`Role of ${owner.email}`).inputValue()).resolves.toBe("owner");
      expect((await members(owner))[owner.email]).toBe("owner");
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the last owner's refusal on their row goes once a second owner is added (it no longer holds); the demotion then succeeds", async () => {
    const owner = await newOrg(s);
    const second = await stranger();
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      const refusal = page.locator("#members-table .field-error");
      await row(page, owner.email).getByLabel(`Role of ${owner.email}`).selectOption("member");
      await expect(shownText(page, `#members-table tr[data-email="${owner.email}"] .field-error`)).resolves.toContain("last owner");

      const form = page.locator("#invite-form");
      await form.getByLabel("Email").fill(second);
      await form.getByLabel("Role").selectOption("owner");
      await form.getByRole("button", { name: "Add member" }).click();
      await row(page, second).waitFor();
      await refusal.waitFor({ state: "detached" });

      const changed = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/members/"));
      await row(page, owner.email).getByLabel(`Role of ${owner.email}`).selectOption("member");
      expect((await changed).status()).toBe(200);
      expect(await members(owner)).toEqual({ [owner.email]: "member", [second]: "owner" });
      await expect(refusal.count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("someone in no organization creates one here: they own it and it is the one in use", async () => {
    const email = await stranger();
    await steps(async ({ page, problems }) => {
      await openAs(s, page, { email }, "/settings");
      const form = page.locator("#create-org-form");
      await form.getByLabel("Organization name").fill("Nova Labs");
      await form.getByRole("button", { name: "Create organization" }).click();
      await row(page, email).waitFor();
      await expect(page.locator("#org-form").getByLabel("Organization name").inputValue()).resolves.toBe("Nova Labs");
      await expect(row(page, email).getByLabel(`Role of ${email}`).inputValue()).resolves.toBe("owner");
      await expect(page.locator("#org-switch").inputValue()).resolves.toBe((await page.locator("#org-switch option", { hasText: "Nova Labs" }).getAttribute("value"))!);
      const { accessToken } = await login(s, email, PASSWORD);
      expect((await s.api("GET", "/orgs", { token: accessToken })).body.items.map((o: { name: string; role: string }) => [o.name, o.role])).toEqual([["Nova Labs", "owner"]]);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("an admin cannot give or change the owner role; a viewer sees the members but no form, and why", async () => {
    const owner = await newOrg(s);
    const adminMember = await addMember(s, owner, "admin");
    const viewer = await addMember(s, owner, "viewer");
    await steps(async ({ page, problems }) => {
      await open(page, adminMember);
      await row(page, owner.email).waitFor();
      expect(await page.locator("#invite-form select[name=role] option").evaluateAll((os) => os.map((o) => (o as any).value))).toEqual(["admin", "member", "viewer"]);
      // The owner's row is not editable by an admin.
      await expect(row(page, owner.email).locator("select").count()).resolves.toBe(0);
      await expect(row(page, owner.email).getByRole("button", { name: "Remove" }).count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
    await steps(async ({ page, problems }) => {
      await open(page, viewer);
      await row(page, owner.email).waitFor();
      await page.getByText("only owners and admins change these settings").waitFor();
      await expect(page.locator("#invite-form").count()).resolves.toBe(0);
      await expect(page.locator("#members-table select").count()).resolves.toBe(0);
      await expect(page.locator("#approval-rule input").isDisabled()).resolves.toBe(true);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("screenshot and the phone layout", async () => {
    const owner = await newOrg(s, "Acme");
    await s.api("PATCH", "/me", { token: owner.accessToken, body: { name: "Olive Owner" } });
    for (const role of ["admin", "member", "viewer"] as const) await addMember(s, owner, role);
    await steps(
      async ({ page, problems }) => {
        await open(page, owner);
        await page.locator("#members-table tbody tr").nth(3).waitFor();
        await docsScreenshot(page, "settings");
        expect(problems).toEqual([]);
      },
      DESKTOP,
    );
    await steps(
      async ({ page, problems }) => {
        await open(page, owner);
        await page.locator("#members-table tbody tr").nth(3).waitFor();
        expect(await overflowsSideways(page)).toBe(false);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, MANAGE_TEST_MS);
});
