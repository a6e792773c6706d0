// The account page "/account" (SPEC §4, §11): the name, two-factor setup with a QR code read by
// the test (the QR's modules are compared with the otpauth link's own encoding, and the code is
// computed from the link's secret with otplib), then a sign-in with a code; personal API tokens
// shown once and revoked; signing out of every session. Checked through the API each time.
import { expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { encode } from "uqr";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, login, type Session } from "../helpers/identity";
import { DESKTOP, PHONE, describeBrowser, docsScreenshot, openSignedIn, overflowsSideways, shownText, signInWithForm, webSuite } from "./browser";
import { MANAGE_TEST_MS, PASSWORD, manageSteps, openAs, secretOf, totp } from "./manage-fixtures";

describeBrowser("web: account page", () => {
  let s: TestServer;
  let browser: Browser;
  const steps = manageSteps(() => browser);
  let owner: Session;
  webSuite(async (up) => {
    ({ s, browser } = up);
    owner = await createAdmin(s);
  });

  /** Signed in through the form (the first test), or already (the others). */
  const openWithForm = (page: Page, who: Session) => openSignedIn(page, `${s.url}/account`, who.email, PASSWORD, "Sign in to manage your account.");
  const open = (page: Page, who: Session) => openAs(s, page, who, "/account");

  /** The dark modules of the page's QR code, as the SVG path draws them (one unit square each). */
  const qrModules = (page: Page) =>
    page.locator("svg.qr path").getAttribute("d").then((d) => [...(d ?? "").matchAll(/M(\d+),(\d+)h1v1h-1z/g)].map((m) => `${m[1]},${m[2]}`).sort());
  const expectedModules = (text: string) => {
    const { data } = encode(text, { ecc: "M", border: 2 });
    const out: string[] = [];
    data.forEach((row, y) => row.forEach((dark, x) => dark && out.push(`${x},${y}`)));
    return out.sort();
  };

  test("two-factor: the QR code encodes the otpauth link; a code from its secret turns it on, recovery codes show once; signing in then asks for a code", async () => {
    const m = await addMember(s, owner, "member");
    let secret = "";
    await steps(async ({ page, problems }) => {
      await openWithForm(page, m);
      await page.getByRole("button", { name: "Set up two-factor sign-in" }).click();
      const link = await page.locator("#otpauth-link").getAttribute("href");
      expect(link).toStartWith("otpauth://totp/");
      expect(await qrModules(page)).toEqual(expectedModules(link!));
      secret = secretOf(link!);
      expect((await page.locator("#totp-key").textContent())!.replaceAll(" ", "")).toBe(secret);

      // A wrong code is refused beside the form, and nothing changes.
      await page.getByLabel("Code from the app").fill("000000");
      await page.getByRole("button", { name: "Turn on" }).click();
      await expect(shownText(page, "#two-factor-setup .error")).resolves.toContain("not valid");
      expect((await s.api("GET", "/me", { token: m.accessToken })).body.twoFactorEnabled).toBe(false);

      // The current step's code; the sign-in below uses the next step's, as a step is accepted once.
      await page.getByLabel("Code from the app").fill(await totp(secret));
      await page.getByRole("button", { name: "Turn on" }).click();
      await page.locator("#recovery-codes").waitFor();
      const codes = await page.locator("#recovery-codes ol.codes li").allTextContents();
      expect(codes).toHaveLength(10);
      expect((await s.api("GET", "/me", { token: m.accessToken })).body.twoFactorEnabled).toBe(true);
      // A recovery code shown is a real one: it signs in (once).
      expect((await s.api("POST", "/auth/login", { body: { email: m.email, password: PASSWORD, code: codes[9] } })).status).toBe(200);
      expect(problems).toEqual([]);
    });

    // A new browser: the password alone is not enough now; the current code signs in.
    await steps(async ({ page, problems }) => {
      await page.goto(`${s.url}/account`);
      await signInWithForm(page, m.email, PASSWORD);
      await page.getByLabel("Two-factor code").fill(await totp(secret, 1));
      await page.locator("#signin-form").getByRole("button", { name: "Sign in" }).click();
      await page.locator("#two-factor").getByText("Signing in asks for a code").waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a personal API token: created for a chosen org and role, the value shown once (it works), gone after a reload; revoked, it stops", async () => {
    const m = await addMember(s, owner, "admin");
    await steps(async ({ page, problems }) => {
      await open(page, m);
      await page.getByText("No tokens yet.").waitFor();
      const form = page.locator("#token-form");
      await form.getByLabel("Token name").fill("CI on main");
      await form.getByLabel("Role").selectOption("member");
      await form.getByRole("button", { name: "Create token" }).click();
      const value = await page.locator("#token-secret-value").inputValue();
      expect(value).toMatch(/^aot_[0-9A-Za-z]{36}$/);
      // The value shown is the real token, with the role chosen.
      const me = await s.api("GET", "/me", { token: value });
      expect([me.status, me.body.via.type, me.body.via.role, me.body.via.orgId]).toEqual([200, "token", "member", owner.orgId]);
      const listed = (await s.api("GET", "/me/tokens", { token: m.accessToken })).body.items;
      expect(listed.map((t: { name: string; lastFour: string }) => [t.name, t.lastFour])).toEqual([["CI on main", value.slice(-4)]]);
      await page.locator("#tokens-table tbody tr", { hasText: "CI on main" }).waitFor();

      await page.reload();
      await page.locator("#tokens-table tbody tr", { hasText: "CI on main" }).waitFor();
      expect(await page.locator("#token-secret").count()).toBe(0);
      expect(await page.content()).not.toContain(value);

      await page.locator("#tokens-table tbody tr", { hasText: "CI on main" }).getByRole("button", { name: "Revoke" }).click();
      // The row goes before the answer (optimistic): the token is checked once the DELETE answered.
      const revoked = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().includes("/me/tokens/"));
      await page.getByRole("dialog").getByRole("button", { name: "Yes, revoke" }).click();
      await page.getByText("No tokens yet.").waitFor();
      expect((await revoked).status()).toBe(204);
      expect((await s.api("GET", "/me", { token: value })).status).toBe(401);
      expect((await s.api("GET", "/me/tokens", { token: m.accessToken })).body.items).toEqual([]);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a token's expiry date is the end of that day in the person's time zone (west and east of UTC), shown as that day on hover", async () => {
    const year = new Date().getUTCFullYear() + 1;
    const zones = [
      { timezoneId: "America/Los_Angeles", ends: `${year}-12-02T07:59:59.000Z` },
      { timezoneId: "Europe/Paris", ends: `${year}-12-01T22:59:59.000Z` },
    ];
    for (const { timezoneId, ends } of zones) {
      const m = await addMember(s, owner, "member");
      await steps(
        async ({ page, problems }) => {
          await open(page, m);
          await page.getByText("No tokens yet.").waitFor();
          const form = page.locator("#token-form");
          await form.getByLabel("Token name").fill(`Until December, ${timezoneId}`);
          await form.getByLabel("Expires").fill(`${year}-12-01`);
          await form.getByRole("button", { name: "Create token" }).click();
          const expires = page.locator("#tokens-table tbody tr", { hasText: "Until December" }).locator("time");
          await expires.waitFor();
          const listed = (await s.api("GET", "/me/tokens", { token: m.accessToken })).body.items as { expiresAt: string }[];
          expect(listed.map((t) => new Date(t.expiresAt).toISOString())).toEqual([ends]);
          await expect(expires.getAttribute("title")).resolves.toBe(`1 Dec ${year}, 23:59:59`);
          expect(problems).toEqual([]);
        },
        { width: 900, height: 760, timezoneId },
      );
    }
  }, MANAGE_TEST_MS);

  test("a token name the API refuses is explained beside the field; nothing is created", async () => {
    const m = await addMember(s, owner, "member");
    await steps(async ({ page, problems }) => {
      await open(page, m);
      const form = page.locator("#token-form");
      await form.getByLabel("Token name").fill("   ");
      await form.getByRole("button", { name: "Create token" }).click();
      await expect(shownText(page, "#token-name-error")).resolves.not.toBe("");
      expect((await s.api("GET", "/me/tokens", { token: m.accessToken })).body.items).toEqual([]);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a complaint about a field the form does not show is said below the form, naming the field; one about a field it shows, beside that field only", async () => {
    const m = await addMember(s, owner, "member");
    await steps(async ({ page, problems }) => {
      await open(page, m);
      // As a page of another version than its server's would: the body carries a field this server does not take.
      await page.route("**/api/v1/me/tokens", (route) =>
        route.request().method() === "POST" ? route.continue({ postData: JSON.stringify({ ...route.request().postDataJSON(), scopes: ["tasks"] }) }) : route.continue(),
      );
      const form = page.locator("#token-form");
      await form.getByLabel("Token name").fill("CI");
      await form.getByRole("button", { name: "Create token" }).click();
      // It was dropped: the form said nothing at all.
      await expect(shownText(page, "#token-form p.error")).resolves.toBe("Please check: scopes: unknown field; expected one of name, orgId, role, expiresAt.");
      await expect(form.locator(".field-error").count()).resolves.toBe(0);

      await page.unroute("**/api/v1/me/tokens");
      await form.getByLabel("Token name").fill("   ");
      await form.getByRole("button", { name: "Create token" }).click();
      await expect(shownText(page, "#token-name-error")).resolves.not.toBe("");
      await expect(form.locator("p.error").count()).resolves.toBe(0);
      expect((await s.api("GET", "/me/tokens", { token: m.accessToken })).body.items).toEqual([]);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the name is saved; sign out everywhere ends every session (this one too) and shows the sign-in form", async () => {
    const m = await addMember(s, owner, "member");
    const cli = await login(s, m.email);
    await steps(async ({ page, problems }) => {
      await open(page, m);
      await page.locator("#profile-form").getByLabel("Name").fill("Grace Hopper");
      await page.locator("#profile-form").getByRole("button", { name: "Save" }).click();
      await page.locator("#profile-form").getByText("Saved").waitFor();
      expect((await s.api("GET", "/me", { token: m.accessToken })).body.name).toBe("Grace Hopper");
      // Three sessions: the helper's, the command line's and this browser's.
      await page.locator("#sessions-list li").nth(2).waitFor();
      await expect(page.locator("#sessions-list li", { hasText: "this session" }).count()).resolves.toBe(1);

      await page.getByRole("button", { name: "Sign out everywhere" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Yes, sign out everywhere" }).click();
      await page.locator("#signin-form").waitFor();
      for (const t of [m.accessToken, cli.accessToken]) expect((await s.api("GET", "/me", { token: t })).status).toBe(401);
      // The browser's own refresh cookie is spent too: a reload asks to sign in again.
      await page.reload();
      await page.getByText("Sign in to manage your account.").waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("sign out everywhere makes no call with the session it just ended (no sign-out call, no 401); the page is signed out", async () => {
    const m = await addMember(s, owner, "member");
    await steps(async ({ page, problems }) => {
      await open(page, m);
      await page.locator("#sessions-list li").first().waitFor();
      const calls: string[] = [];
      page.on("response", (r) => {
        const path = new URL(r.url()).pathname;
        if (path.startsWith("/api/")) calls.push(`${r.request().method()} ${path} ${r.status()}`);
      });
      const ended = page.waitForResponse((r) => r.request().method() === "DELETE" && r.url().endsWith("/api/v1/me/sessions"));
      await page.getByRole("button", { name: "Sign out everywhere" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Yes, sign out everywhere" }).click();
      expect((await ended).status()).toBe(204);
      await page.locator("#signin-form").waitFor();
      // Signed out by the person, not ended by the server: the form does not say the sign-in ended.
      await expect(page.locator("#signin-ended").count()).resolves.toBe(0);
      expect(calls.filter((c) => c.includes("/auth/logout") || c.endsWith(" 401"))).toEqual([]);
      expect((await s.api("GET", "/me", { token: m.accessToken })).status).toBe(401);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("screenshot (desktop) and the phone layout: nothing sticks out sideways", async () => {
    const m = await addMember(s, owner, "member");
    await s.api("PATCH", "/me", { token: m.accessToken, body: { name: "Ada Lovelace" } });
    await s.api("POST", "/me/tokens", { token: m.accessToken, body: { name: "laptop", orgId: owner.orgId } });
    await steps(
      async ({ page, problems }) => {
        await open(page, m);
        await page.locator("#tokens-table tbody tr").first().waitFor();
        await page.locator("#sessions-list li").first().waitFor();
        await docsScreenshot(page, "account");
        expect(problems).toEqual([]);
      },
      DESKTOP,
    );
    await steps(
      async ({ page, problems }) => {
        await open(page, m);
        await page.locator("#tokens-table tbody tr").first().waitFor();
        await page.getByRole("button", { name: "Set up two-factor sign-in" }).click();
        await page.locator("svg.qr").waitFor();
        expect(await overflowsSideways(page)).toBe(false);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, MANAGE_TEST_MS);
});
