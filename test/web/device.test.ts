// The device page (SPEC §4): a real `ao login` prints its link; the person opens it, signs in,
// sees the request and approves it, and the command line is signed in. Denial, unknown codes
// and typing the code by hand too.
import { expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { newConfigDir, readSessionFile, spawnCli } from "../cli/helpers";
import { describeBrowser, usePage, screenshot, shownText, signInWithForm, webSuite } from "./browser";

const PASSWORD = "correct horse battery staple";

describeBrowser("web: device sign-in page", () => {
  let s: TestServer;
  let browser: Browser;
  let admin: Session;
  webSuite(async (up) => {
    ({ s, browser } = up);
    admin = await createAdmin(s);
  });

  test("ao login's link: sign in, see the request, Approve; the command line is then signed in", async () => {
    const dir = newConfigDir();
    const cli = spawnCli(["login", "--server", s.url], { AO_CONFIG_DIR: dir });
    try {
      const [link, code] = await cli.waitFor(/(http:\S+\/device\?code=([B-Z]{4}-[B-Z]{4}))/).then((m) => [m[1]!, m[2]!]);
      await usePage(browser, async ({ page, problems }) => {
        await page.goto(link);
        await page.getByText("Sign in to approve the device sign-in.").waitFor();
        await signInWithForm(page, admin.email, PASSWORD);
        await page.getByRole("heading", { name: "Sign in a device?" }).waitFor();
        await expect(page.locator("#grant-code").textContent()).resolves.toBe(code);
        await expect(page.locator("#grant-client").textContent()).resolves.toStartWith("ao cli on ");
        await expect(page.locator("#grant-ip").textContent()).resolves.toBe("127.0.0.1");
        await expect(page.locator("#grant-created").textContent()).resolves.toMatch(/\d{4}.*\(now\)$/);
        await screenshot(page, "device");
        await page.getByRole("button", { name: "Approve" }).click();
        await page.getByRole("heading", { name: "Device signed in" }).waitFor();
        await screenshot(page, "device-approved");

        const r = await cli.done;
        expect(r.stderr).toBe("");
        expect(r.code).toBe(0);
        expect(r.stdout).toContain(`Signed in to ${s.url} as ${admin.email}, organization admin-org`);
        const saved = readSessionFile(dir);
        expect((await s.api("GET", "/me", { token: saved.accessToken })).body.id).toBe(admin.userId);
        expect(problems).toEqual([]);
      });
    } finally {
      cli.kill();
    }
  }, 90_000);

  test("Deny: the device is refused and the code is spent", async () => {
    const start = (await s.api("POST", "/auth/device/start", { body: { clientName: "laptop" } })).body;
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(start.verificationUriComplete);
      await signInWithForm(page, admin.email, PASSWORD);
      await page.getByRole("heading", { name: "Sign in a device?" }).waitFor();
      await expect(page.locator("#grant-client").textContent()).resolves.toBe("laptop");
      await page.getByRole("button", { name: "Deny" }).click();
      await page.getByRole("heading", { name: "Sign-in denied" }).waitFor();
      const poll = await s.api("POST", "/auth/device/poll", { body: { deviceCode: start.deviceCode } });
      expect([poll.status, poll.body.error.code]).toEqual([400, "access_denied"]);
      // The same link again: the code is no longer pending, and the page says so.
      await page.goto(start.verificationUriComplete);
      await expect(shownText(page, "#code-error")).resolves.toStartWith(`The code ${start.userCode} is unknown, expired or already used.`);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("/device without a code asks for it; a wrong one is explained, a right one (any case) is found", async () => {
    const start = (await s.api("POST", "/auth/device/start", { body: { clientName: "typed" } })).body;
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(`${s.url}/device`);
      await signInWithForm(page, admin.email, PASSWORD);
      await page.getByRole("heading", { name: "Enter the code" }).waitFor();
      await page.getByLabel("Code", { exact: true }).fill("BBBB-BBBB");
      await page.getByRole("button", { name: "Continue" }).click();
      await expect(shownText(page, "#code-error")).resolves.toContain("The code BBBB-BBBB is unknown");
      await page.getByLabel("Code", { exact: true }).fill(start.userCode.toLowerCase());
      await page.getByRole("button", { name: "Continue" }).click();
      await page.getByRole("heading", { name: "Sign in a device?" }).waitFor();
      await expect(page.locator("#grant-client").textContent()).resolves.toBe("typed");
      expect(new URL(page.url()).searchParams.get("code")).toBe(start.userCode.toLowerCase());
      // A decision that fails on the server (here: decided meanwhile elsewhere) is shown, not swallowed.
      await s.api("POST", "/auth/device/deny", { body: { userCode: start.userCode }, token: admin.accessToken });
      await page.getByRole("button", { name: "Approve" }).click();
      await expect(shownText(page, "#grant-error")).resolves.toBe("This request is no longer pending: it expired or was decided elsewhere.");
      expect(problems).toEqual([]);
    });
  }, 90_000);
});
