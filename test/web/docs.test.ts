// The API reference page (/api/v1/docs) keeps to this server: a Content-Security-Policy as strict
// as the web app's for scripts, nothing fetched from another origin (no CDN, no web fonts), and
// none of Scalar's cloud buttons (Ask AI, MCP, developer tools with Deploy).
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server";
import { describeBrowser, launchBrowser, screenshot, usePage } from "./browser";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

/** The labels of Scalar's buttons that lead to its cloud services (seen on the page before). */
const CLOUD_BUTTONS = ["Ask AI", "Generate MCP", "Connect MCP", "VS Code", "Cursor", "Developer Tools", "Configure", "Share", "Deploy"];

test("docs: the page is served with a strict policy: scripts from this server only, no eval, no other origin", async () => {
  const res = await fetch(s.url + "/api/v1/docs");
  expect(res.status).toBe(200);
  const policy = (res.headers.get("content-security-policy") ?? "").split("; ");
  expect(policy).toContain("default-src 'self'");
  expect(policy).toContain("script-src 'self'");
  expect(policy).toContain("connect-src 'self'");
  expect(policy).toContain("font-src 'self'");
  expect(policy).toContain("frame-ancestors 'none'");
  expect(policy.join("; ")).not.toMatch(/unsafe-eval|https?:|\*/);
  expect(res.headers.get("x-frame-options")).toBe("DENY");
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  const html = await res.text();
  // Every script is a file of this server, or inert data (the configuration).
  for (const tag of html.match(/<script[^>]*>/g) ?? []) expect(tag).toMatch(/\ssrc="\/api\/v1\/docs\/|type="application\/json"/);
  expect(html).not.toMatch(/https?:\/\//);
  const setup = await fetch(s.url + "/api/v1/docs/setup.js");
  expect([setup.status, setup.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
});

describeBrowser("web: the API reference page", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => browser?.close());

  test("renders the API from this server alone, breaks no rule of its policy, shows no cloud button", async () => {
    await usePage(
      browser,
      async ({ page, problems }) => {
        await page.addInitScript(`document.addEventListener("securitypolicyviolation", (e) =>
          (window.__violations = [...(window.__violations ?? []), e.violatedDirective + " " + e.blockedURI + " at " + e.sourceFile + ":" + e.lineNumber]))`);
        await page.goto(`${s.url}/api/v1/docs`);
        await page.getByRole("heading", { name: "ao API" }).waitFor();
        await page.getByRole("heading", { name: "Liveness check (no authentication)" }).waitFor();
        // The sidebar lists the operations' groups.
        for (const group of ["auth", "tasks", "worker protocol", "integrations"]) await page.getByText(group, { exact: true }).first().waitFor();
        await page.getByText("Powered by Scalar").waitFor();
        // Fonts are asked for once text is laid out: wait for them to settle before looking.
        await page.evaluate("document.fonts.ready.then(() => undefined)");
        await screenshot(page, "api-docs");

        await expect(page.evaluate("window.__violations ?? []")).resolves.toEqual([]);
        const origins = (await page.evaluate("performance.getEntriesByType('resource').map((e) => new URL(e.name).origin)")) as string[];
        expect(origins.length).toBeGreaterThan(0);
        expect([...new Set(origins)]).toEqual([s.url]);
        const labels = (await page.locator("button, a").allInnerTexts()).map((t) => t.trim());
        expect(labels.filter((l) => CLOUD_BUTTONS.some((c) => l.startsWith(c)))).toEqual([]);
        expect(problems).toEqual([]);
      },
      { width: 1280, height: 900 },
    );
  }, 90_000);
});
