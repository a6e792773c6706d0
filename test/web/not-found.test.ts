// Unknown paths (SPEC §11): outside the API a person gets an HTML 404 page in the app's style,
// with the pages' security headers and a way home; under /api/ a program keeps the JSON error.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server";
import { describeBrowser, launchBrowser, screenshot, usePage } from "./browser";
import { CONTENT_SECURITY_POLICY } from "../../src/web";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

test.each([
  ["GET", "/no-such-page"],
  ["GET", "/tasks/tsk_1/more"],
  ["GET", "/tasks/tsk_1/artifacts"],
  ["GET", "/tasks/tsk_1/artifacts/report.txt/more"],
  ["GET", "/assets/nope.js"],
  ["GET", "/assets/app.ts"],
  ["GET", "/apifoo"],
  ["POST", "/no-such-page"],
])("web: %s %s is the HTML 404 page", async (method, path) => {
  const res = await fetch(s.url + path, { method });
  expect(res.status).toBe(404);
  expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(res.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
  expect(res.headers.get("x-frame-options")).toBe("DENY");
  const body = await res.text();
  expect(body).toStartWith("<!doctype html>");
  expect(body).toContain("<h1 id=\"not-found-title\">Page not found</h1>");
  expect(body).toContain('<a href="/">Home</a>');
  expect(body).toContain('<link rel="stylesheet" href="/assets/app.css">');
});

test("web: HEAD of an unknown page is 404 without a body", async () => {
  const res = await fetch(s.url + "/no-such-page", { method: "HEAD" });
  expect([res.status, res.headers.get("content-type"), await res.text()]).toEqual([404, "text/html; charset=utf-8", ""]);
});

test.each([
  ["GET", "/api/v1/no-such-route"],
  ["GET", "/api/no-such-version"],
  ["GET", "/api"],
  ["DELETE", "/api/v1/health"],
])("web: %s %s keeps the API's JSON 404", async (method, path) => {
  const res = await fetch(s.url + path, { method });
  expect(res.status).toBe(404);
  expect(res.headers.get("content-type")).toStartWith("application/json");
  expect(await res.json()).toEqual({ error: { code: "not_found", message: "no such route" } });
});

describeBrowser("web: the 404 page", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => browser?.close());

  test("shows in the app's style, breaks no rule of the page's CSP, and links home", async () => {
    await usePage(browser, async ({ page, problems }) => {
      const res = await page.goto(`${s.url}/no/such/page`);
      expect(res?.status()).toBe(404);
      await page.getByRole("heading", { name: "Page not found" }).waitFor();
      // The stylesheet applied: the section is drawn as the app's cards are.
      await expect(page.locator("#not-found").evaluate((e) => (globalThis as any).getComputedStyle(e).borderRadius)).resolves.toBe("10px");
      await expect(page.locator("header.bar .brand").isVisible()).resolves.toBe(true);
      await screenshot(page, "not-found");
      await page.getByRole("link", { name: "Home" }).click();
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      expect(page.url()).toBe(`${s.url}/`);
      // A 404 is logged by Chromium as a failed resource load; anything else is a page problem.
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
