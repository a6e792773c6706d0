// Signing in on "/" (SPEC §4, web mode): errors shown readably, two-factor asked for when the
// account has it, the session restored from the HttpOnly cookie (never from page storage),
// single-flight refreshes across tabs, sign-out; and the pages' security headers.
import { afterAll, expect, test } from "bun:test";
import { generate } from "otplib";
import type { Browser, Page } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, signUp, type Session } from "../helpers/identity";
import { describeBrowser, usePage, screenshot, shownText, signInWithForm, webSuite } from "./browser";
import { CONTENT_SECURITY_POLICY } from "../../src/web";
import { pagePolicy } from "../../src/modules/web";

const PASSWORD = "correct horse battery staple";

describeBrowser("web: sign-in", () => {
  let s: TestServer;
  let browser: Browser;
  let admin: Session;
  webSuite(async (up) => {
    ({ s, browser } = up);
    admin = await createAdmin(s);
  });

  const home = (page: Page) => page.getByRole("heading", { name: /^Welcome/ });

  test("a wrong password shows the error; the right one shows who you are and your orgs", async () => {
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/`);
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      await screenshot(page, "signin");

      await signInWithForm(page, admin.email, "not the password");
      await expect(shownText(page, "[role=alert]")).resolves.toBe("Wrong email or password.");
      await expect(page.getByLabel("Password").inputValue()).resolves.toBe("");
      await screenshot(page, "signin-error");

      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await home(page).waitFor();
      await expect(page.locator("#home-email").textContent()).resolves.toBe(admin.email);
      await expect(page.locator("#home-orgs").textContent()).resolves.toBe("admin-org owner");
      await expect(page.locator("#who-name").textContent()).resolves.toContain(admin.email);
      await screenshot(page, "home");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("empty fields are caught in the page without a request", async () => {
    await usePage(browser, async ({ page }) => {
      await page.goto(`${s.url}/`);
      let logins = 0;
      page.on("request", (r) => void (r.url().endsWith("/auth/login") && logins++));
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect(shownText(page, "[role=alert]")).resolves.toBe("Enter your email and password.");
      expect(logins).toBe(0);
    });
  }, 90_000);

  test("an account with two-factor is asked for its code; a wrong code is refused, the right one signs in", async () => {
    const u = await signUp(s);
    const email = (await s.api("GET", "/me", { token: u.accessToken })).body.email;
    const { secret } = (await s.api("POST", "/me/2fa/setup", { token: u.accessToken })).body;
    const now = () => Math.floor(Date.now() / 1000);
    // Enabled with the current step's code; the sign-in uses the next step's, as a step is accepted once
    // (both survive a step boundary crossed on the way to the server, which accepts one step either way).
    const enabled = await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: await generate({ secret, epoch: now() }) } });
    expect(enabled.status).toBe(200);

    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/`);
      await expect(page.getByLabel("Two-factor code").isVisible()).resolves.toBe(false);
      await signInWithForm(page, email, PASSWORD);
      await page.getByLabel("Two-factor code").waitFor();
      await expect(page.evaluate("document.activeElement.id")).resolves.toBe("signin-code");
      await screenshot(page, "signin-2fa");

      await page.getByLabel("Two-factor code").fill("000000");
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect(shownText(page, "[role=alert]")).resolves.toStartWith("That two-factor code is not valid");

      await page.getByLabel("Two-factor code").fill(await generate({ secret, epoch: now() + 30 }));
      await page.getByRole("button", { name: "Sign in" }).click();
      await home(page).waitFor();
      await expect(page.locator("#home-account").textContent()).resolves.toContain("two-factor on");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("too many failures: the rate limit is shown with its wait", async () => {
    const u = await signUp(s);
    const email = (await s.api("GET", "/me", { token: u.accessToken })).body.email;
    for (let i = 0; i < 10; i++) await s.api("POST", "/auth/login", { body: { email, password: "wrong password" } });
    await usePage(browser, async ({ page }) => {
      await page.goto(`${s.url}/`);
      await signInWithForm(page, email, PASSWORD);
      await expect(shownText(page, "[role=alert]")).resolves.toMatch(/^Too many failed attempts\. Try again in \d+ minutes?\.$/);
    });
  }, 90_000);

  test("the session survives a reload through the HttpOnly cookie only; sign-out ends it", async () => {
    await usePage(browser, async ({ page, context, problems }) => {
      await page.goto(`${s.url}/`);
      await signInWithForm(page, admin.email, PASSWORD);
      await home(page).waitFor();

      const [cookie, ...others] = await context.cookies();
      expect(others).toEqual([]);
      expect(cookie).toMatchObject({ name: "ao_refresh", path: "/api/v1/auth", httpOnly: true, sameSite: "Strict", secure: false });
      // (Page-side code as strings: the tests' type check has no DOM types.)
      const storage = await page.evaluate("({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })");
      expect(storage).toEqual({ local: 0, session: 0, cookie: "" });

      await page.reload();
      await home(page).waitFor();
      await expect(page.locator("#home-email").textContent()).resolves.toBe(admin.email);

      // Sign out is in the person's menu, at the foot of the sidebar.
      await page.locator("#who-name").click();
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      await page.reload();
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      // The refresh token the browser held is revoked on the server, not only forgotten.
      const refresh = await s.api("POST", "/auth/refresh", { headers: { "x-client": "web", cookie: `ao_refresh=${cookie.value}` } });
      expect(refresh.status).toBe(401);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  // Plain http on a LAN address is no secure context: no Web Locks there, so the page falls back
  // to its own lock. Removing navigator.locks in the page plays that case on 127.0.0.1.
  test.each([
    ["with Web Locks", ""],
    ["without Web Locks (plain http)", "Object.defineProperty(Navigator.prototype, 'locks', { get: () => undefined });"],
  ])("tabs opened together restore one session without tripping refresh-token reuse (%s)", async (_name, init) => {
    await usePage(browser, async (first) => {
      if (init) await first.context.addInitScript(init);
      await first.page.goto(`${s.url}/`);
      await expect(first.page.evaluate("navigator.locks === undefined")).resolves.toBe(init !== "");
      await signInWithForm(first.page, admin.email, PASSWORD);
      await home(first.page).waitFor();
      const tabs = await Promise.all([1, 2, 3, 4].map(() => first.context.newPage()));
      await Promise.all(tabs.map((tab) => tab.goto(`${s.url}/`)));
      for (const tab of tabs) await home(tab).waitFor();
      // Parallel refreshes inside one page share one request.
      const refreshes = await first.page.evaluate(
        `import("/assets/app.js").then((app) => Promise.all([app.refresh(), app.refresh(), app.refresh()])).then((users) => users.map((u) => u && u.email))`,
      );
      expect(refreshes).toEqual([admin.email, admin.email, admin.email]);
      // Still one live sign-in: a new tab restores it; and the lock left nothing behind.
      const later = await first.context.newPage();
      await later.goto(`${s.url}/`);
      await home(later).waitFor();
      await expect(later.evaluate("localStorage.length")).resolves.toBe(0);
      expect(first.problems).toEqual([]);
    });
  }, 90_000);

  test("a phone-sized screen gets the same page, laid out for it", async () => {
    await usePage(browser, async ({ page }) => {
      await page.goto(`${s.url}/`);
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      const overflow = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");
      expect(overflow).toBe(0);
      await screenshot(page, "signin-phone");
    }, { width: 375, height: 700 });
  }, 90_000);
});

// Plain HTTP: no browser needed.
test.each(["/", "/setup", "/device", "/device?code=BCDF-GHJK", "/pair?code=BCDF-GHJK", "/assets/app.js", "/assets/app.css", "/tasks", "/tasks/tsk_1", "/projects", "/workers", "/settings", "/account"])(
  "web: %s carries the security headers",
  async (path) => {
    const s = await server();
    const res = await fetch(s.url + path);
    expect(res.status).toBe(200);
    // Pages may post a form to the configured GitHub (the app manifest); assets keep the plain policy.
    expect(res.headers.get("content-security-policy")).toBe(path.startsWith("/assets/") ? CONTENT_SECURITY_POLICY : pagePolicy(s.core.config));
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    expect(CONTENT_SECURITY_POLICY).not.toContain("unsafe-inline");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const body = await res.text();
    if (path.startsWith("/assets/")) return;
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    // No inline script or style: every <script> names a file of this server.
    expect(body).not.toMatch(/<script(?![^>]*\ssrc="\/assets\/[a-z]+\.js")[^>]*>/);
    expect(body).not.toMatch(/\sstyle=|<style|\son[a-z]+=/);
  },
);

test("web: assets revalidate by ETag; unknown ones are the 404 page", async () => {
  const s = await server();
  const first = await fetch(s.url + "/assets/app.js");
  expect(first.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
  expect(first.headers.get("cache-control")).toBe("no-cache");
  const again = await fetch(s.url + "/assets/app.js", { headers: { "if-none-match": first.headers.get("etag")! } });
  expect(again.status).toBe(304);
  for (const path of ["/assets/nope.js", "/assets/..%2F..%2Fpackage.json", "/assets/app.ts", "/assets/toString"]) {
    const res = await fetch(s.url + path);
    expect([path, res.status, (await res.text()).includes("Page not found")]).toEqual([path, 404, true]);
  }
  // The pages are not API operations (the one operation outside /api/v1 is Prometheus's /metrics).
  const doc = (await s.api("GET", "/openapi.json")).body;
  expect(Object.keys(doc.paths).filter((p) => !p.startsWith("/api/v1/"))).toEqual(["/metrics"]);
});

let plain: Promise<TestServer> | undefined;
const server = () => (plain ??= startTestServer());
afterAll(async () => (await plain)?.stop());
