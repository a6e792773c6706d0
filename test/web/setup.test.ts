// First run in a browser (SPEC §2): the setup link the server prints creates the first
// administrator and organization, signs them in, and works once.
import { expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { setupTokenOf } from "../../src/server/bootstrap";
import { describeBrowser, usePage, screenshot, shownText, signInWithForm, webSuite } from "./browser";

describeBrowser("web: first-run setup", () => {
  let s: TestServer;
  let browser: Browser;
  webSuite((up) => ({ s, browser } = up));

  const fill = async (page: import("playwright-core").Page, v: { email: string; password: string; again?: string; org?: string }) => {
    await page.getByLabel("Your name").fill("Ada Admin");
    await page.getByLabel("Email").fill(v.email);
    await page.getByLabel("Password", { exact: true }).fill(v.password);
    await page.getByLabel("Password again").fill(v.again ?? v.password);
    await page.getByLabel("Organization name").fill(v.org ?? "acme");
    await page.getByRole("button", { name: "Create administrator" }).click();
  };

  test("without a token the page says where the link comes from", async () => {
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/setup`);
      await page.getByRole("heading", { name: "Setup link needed" }).waitFor();
      await expect(page.locator("#loading").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("bad input is explained in the page and creates nobody", async () => {
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/setup?token=${setupTokenOf(s.core)}`);
      await fill(page, { email: "ada@example.test", password: "short" });
      await expect(shownText(page, "#setup-error")).resolves.toBe("The password needs at least 8 characters.");
      await fill(page, { email: "ada@example.test", password: "long enough 1", again: "long enough 2" });
      await expect(shownText(page, "#setup-error")).resolves.toBe("The two passwords differ.");
      // The server's own checks come back beside the field they concern, and only there.
      await fill(page, { email: "not-an-email", password: "long enough 1" });
      await expect(shownText(page, "#setup-email-error")).resolves.toBe("must be an email address");
      await expect(page.locator("#setup-error").count()).resolves.toBe(0);
      await page.goto(`${s.url}/setup?token=wrong-token`);
      await fill(page, { email: "ada@example.test", password: "long enough 1" });
      await expect(shownText(page, "#setup-error")).resolves.toContain("This setup link is not valid");
      // A token too long to check is refused as a field the form does not show: still the link's fault.
      await page.goto(`${s.url}/setup?token=${"x".repeat(201)}`);
      await fill(page, { email: "ada@example.test", password: "long enough 1" });
      await expect(shownText(page, "#setup-error")).resolves.toContain("This setup link is not valid");
      expect((await s.api("GET", "/setup")).body).toEqual({ required: true });
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("before setup, the sign-in page says the server awaits it and where its link is, without the token", async () => {
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/`);
      const pending = page.locator("#signin-setup");
      await pending.waitFor();
      await expect(pending.textContent()).resolves.toContain("awaits its first-run setup");
      await expect(pending.textContent()).resolves.toContain("/setup?token=");
      expect(await page.content()).not.toContain(setupTokenOf(s.core)!);
      await page.locator("#signin-form").waitFor();
      await expect(page.locator("#loading").count()).resolves.toBe(0);
      await screenshot(page, "signin-before-setup");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("the setup link creates the first administrator and org, then signs them in; it works once", async () => {
    await usePage(browser, async ({ page, context, problems }) => {
      const token = setupTokenOf(s.core)!;
      await page.goto(`${s.url}/setup?token=${token}`);
      await page.locator("#setup-form").waitFor();
      await expect(page.locator("#loading").count()).resolves.toBe(0);
      await screenshot(page, "setup");
      await fill(page, { email: "ada@example.test", password: "correct horse battery" });
      await page.waitForURL(`${s.url}/`);
      await page.getByRole("heading", { name: "Welcome, Ada Admin" }).waitFor();
      await expect(page.locator("#loading").count()).resolves.toBe(0);
      await expect(page.locator("#home-orgs").textContent()).resolves.toBe("acme owner");
      await expect(page.locator("#home-account").textContent()).resolves.toContain("instance administrator");
      expect((await context.cookies()).map((c) => c.name)).toEqual(["ao_refresh"]);

      // The account is real: the API signs it in as an instance administrator.
      const login = await s.api("POST", "/auth/login", { body: { email: "ada@example.test", password: "correct horse battery" } });
      expect(login.status).toBe(200);
      expect(login.body.user).toMatchObject({ email: "ada@example.test", name: "Ada Admin", isAdmin: true });

      // The same link again: setup is closed.
      await page.goto(`${s.url}/setup?token=${token}`);
      await page.getByRole("heading", { name: "Setup is complete" }).waitFor();
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("once setup is done, the sign-in page no longer mentions it", async () => {
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/`);
      // The form has had the server's answers by the time a refused sign-in shows (it asked first).
      await signInWithForm(page, "ada@example.test", "not the password");
      await expect(shownText(page, "#signin-error")).resolves.toBe("Wrong email or password.");
      await expect(page.locator("#signin-setup").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
