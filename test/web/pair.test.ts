// The pairing page (SPEC §7): a worker starts pairing through the API, the person opens the
// link, signs in, sees the worker, picks an organization and approves; the worker's poll then
// yields its credential. Denial, and people who may not pair anywhere, too.
import { expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { createAdmin, newOrg, signUp, type Session } from "../helpers/identity";
import { describeBrowser, usePage, screenshot, shownText, signInWithForm, webSuite } from "./browser";

const PASSWORD = "correct horse battery staple";

describeBrowser("web: worker pairing page", () => {
  let s: TestServer;
  let browser: Browser;
  let admin: Session;
  webSuite(async (up) => {
    ({ s, browser } = up);
    admin = await createAdmin(s);
  });

  const startPairing = async (name: string, labels = ["linux", "gpu"]) => {
    const r = await s.api("POST", "/worker/pair", { body: { name, hostname: `${name}.lan`, labels } });
    expect(r.status).toBe(200);
    return r.body as { deviceCode: string; userCode: string; verificationUriComplete: string };
  };
  const poll = (deviceCode: string) => s.api("POST", "/worker/pair/poll", { body: { deviceCode } });

  test("approve into a chosen org: the worker's poll yields its credential in that org", async () => {
    // The admin is also a member of a second org, so the choice matters; a viewer org is not offered.
    const second = await newOrg(s, "second-org");
    await s.api("POST", `/orgs/${second.orgId}/members`, { body: { email: admin.email, role: "member" }, token: second.accessToken });
    const third = await newOrg(s, "watch-only");
    await s.api("POST", `/orgs/${third.orgId}/members`, { body: { email: admin.email, role: "viewer" }, token: third.accessToken });

    // (No poll before the decision: a second poll within intervalSec would be slow_down.)
    const p = await startPairing("builder-1");
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(p.verificationUriComplete);
      await page.getByText("Sign in to pair the worker.").waitFor();
      await signInWithForm(page, admin.email, PASSWORD);
      await page.getByRole("heading", { name: "Pair a worker?" }).waitFor();
      await expect(page.locator("#pairing-code").textContent()).resolves.toBe(p.userCode);
      await expect(page.locator("#pairing-name").textContent()).resolves.toBe("builder-1");
      await expect(page.locator("#pairing-hostname").textContent()).resolves.toBe("builder-1.lan");
      await expect(page.locator("#pairing-labels").textContent()).resolves.toBe("linuxgpu");
      await expect(page.locator("#pairing-ip").textContent()).resolves.toBe("127.0.0.1");
      const options = await page.locator("#pairing-org option").allTextContents();
      expect(options.sort()).toEqual(["admin-org (owner)", "second-org (member)"]);
      await screenshot(page, "pair");

      await page.getByLabel("Organization").selectOption({ label: "second-org (member)" });
      await page.getByRole("button", { name: "Approve" }).click();
      await page.getByRole("heading", { name: "Worker paired" }).waitFor();
      await expect(page.locator("#outcome-text").textContent()).resolves.toBe("builder-1 joins second-org. It connects and takes work in a few seconds.");
      await screenshot(page, "pair-approved");

      const done = await poll(p.deviceCode);
      expect(done.status).toBe(200);
      expect(done.body.credential).toStartWith("aow_");
      expect(done.body.orgId).toBe(second.orgId);
      const workers = await s.api("GET", `/orgs/${second.orgId}/workers`, { token: second.accessToken });
      expect(workers.body.items.map((w: { id: string; name: string }) => [w.id, w.name])).toEqual([[done.body.workerId, "builder-1"]]);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("into an org that requires worker approval: the page says the worker waits for it", async () => {
    const strict = await newOrg(s, "strict-org");
    expect((await s.api("PATCH", `/orgs/${strict.orgId}`, { body: { requireWorkerApproval: true }, token: strict.accessToken })).status).toBe(200);
    const p = await startPairing("builder-3");
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(p.verificationUriComplete);
      await signInWithForm(page, strict.email, PASSWORD);
      await page.getByRole("heading", { name: "Pair a worker?" }).waitFor();
      await page.getByRole("button", { name: "Approve" }).click();
      await expect(shownText(page, "#outcome-text")).resolves.toBe("builder-3 joins strict-org. It gets work once an owner or admin of strict-org approves it.");
      const done = await poll(p.deviceCode);
      expect(done.body.orgId).toBe(strict.orgId);
      const worker = await s.api("GET", `/orgs/${strict.orgId}/workers/${done.body.workerId}`, { token: strict.accessToken });
      expect(worker.body.status).toBe("pending_approval");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("Deny: the worker's poll is refused", async () => {
    const p = await startPairing("intruder", []);
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(p.verificationUriComplete);
      await signInWithForm(page, admin.email, PASSWORD);
      await page.getByRole("heading", { name: "Pair a worker?" }).waitFor();
      await expect(page.locator("#pairing-labels").textContent()).resolves.toBe("none");
      await page.getByRole("button", { name: "Deny" }).click();
      await page.getByRole("heading", { name: "Pairing denied" }).waitFor();
      const r = await poll(p.deviceCode);
      expect([r.status, r.body.error.code]).toEqual([400, "access_denied"]);
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("someone who is only a viewer cannot approve; the page says why and the worker stays pending", async () => {
    const viewer = await signUp(s, { role: "viewer" });
    const email = (await s.api("GET", "/me", { token: viewer.accessToken })).body.email;
    const p = await startPairing("builder-2");
    await usePage(browser, async ({ page, problems }) => {
      await page.goto(p.verificationUriComplete);
      await signInWithForm(page, email, PASSWORD);
      await expect(shownText(page, "#pairing-no-orgs")).resolves.toContain("only into an organization where you are an owner, admin or member");
      await expect(page.getByRole("button", { name: "Approve" }).isDisabled()).resolves.toBe(true);
      expect((await poll(p.deviceCode)).body.error.code).toBe("authorization_pending");
      expect(problems).toEqual([]);
    });
  }, 90_000);

  test("a device sign-in code is unknown here (and the other way round)", async () => {
    const signin = (await s.api("POST", "/auth/device/start", {})).body;
    await usePage(browser, async ({ page }) => {
      await page.goto(`${s.url}/pair?code=${signin.userCode}`);
      await signInWithForm(page, admin.email, PASSWORD);
      await expect(shownText(page, "#code-error")).resolves.toStartWith(`The code ${signin.userCode} is unknown`);
    });
  }, 90_000);
});
