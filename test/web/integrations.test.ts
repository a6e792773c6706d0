// The integrations page "/integrations" (SPEC §9, §11): create an integration and see its secret
// once (the secret shown signs a real delivery; after a reload only its last 4 characters show),
// enable and disable, rotate the secret, the delivery log with its tries and Redeliver against a
// real receiver on loopback, the completion webhook; only owners and admins manage them.
import { afterEach, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember, newOrg, type Session } from "../helpers/identity";
import { Receiver, deliver, putInState, svcSignature } from "../integrations/fixtures";
import { DESKTOP, PHONE, describeBrowser, docsScreenshot, openSignedIn, overflowsSideways, shownText, webSuite } from "./browser";
import { MANAGE_TEST_MS, PASSWORD, manageSteps, openAs } from "./manage-fixtures";

describeBrowser("web: integrations page", () => {
  let s: TestServer;
  let browser: Browser;
  const steps = manageSteps(() => browser);
  const receivers: Receiver[] = [];
  webSuite((up) => ({ s, browser } = up), { server: { allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [100, 200, 300], timeoutMs: 2000 } } });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.stop()));
  });

  async function orgWithProject(projects = ["shop"]) {
    const owner = await newOrg(s);
    for (const name of projects) expect((await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name } })).status).toBe(201);
    return owner;
  }
  /** Signed in through the form (the first test), or already (the others). */
  const openWithForm = (page: Page, who: Session) => openSignedIn(page, `${s.url}/integrations`, who.email, PASSWORD, "Sign in to manage the integrations.");
  const open = (page: Page, who: Session) => openAs(s, page, who, "/integrations");
  const integrations = async (o: Session) => (await s.api("GET", `/orgs/${o.orgId}/integrations`, { token: o.accessToken })).body.items as { id: string; name: string; enabled: boolean; secretLast4: string; callbackUrl: string | null }[];
  const signedDelivery = (id: string, secret: string, title = "From CI") => {
    const body = JSON.stringify({ title, prompt: "run the tests" });
    return deliver(s, id, body, { "x-svc-signature": svcSignature(secret, body) });
  };
  const card = (page: Page, name: string) => page.locator(".integration-card", { has: page.locator("h3", { hasText: new RegExp(`^${name}$`) }) });

  test("create a signed JSON integration: the secret shows once and signs a real delivery; after a reload only its last 4 characters", async () => {
    const owner = await orgWithProject(["shop", "docs"]);
    const rx = new Receiver();
    receivers.push(rx);
    await steps(async ({ page, problems }) => {
      await openWithForm(page, owner);
      await page.locator("#integrations-empty").waitFor();
      const form = page.locator("#new-integration form");
      await form.getByLabel("Kind").selectOption("signed_json");
      await form.getByLabel("Name").fill("CI pipeline");
      await form.getByLabel("Project").selectOption({ label: "docs" });
      await form.getByLabel("Callback URL").fill(rx.url());
      await form.getByRole("button", { name: "Create integration" }).click();
      const secret = await page.locator("#integration-secret-value").inputValue();
      expect(secret).toStartWith("aos_");
      const [made] = await integrations(owner);
      expect([made!.name, made!.callbackUrl, made!.secretLast4]).toEqual(["CI pipeline", rx.url(), secret.slice(-4)]);
      await card(page, "CI pipeline").locator(".hook-url", { hasText: `/api/v1/hooks/${made!.id}` }).waitFor();
      // The secret shown is the one the server checks.
      const r = await signedDelivery(made!.id, secret);
      expect([r.status, r.body.status]).toEqual([201, "created"]);

      await page.reload();
      await card(page, "CI pipeline").waitFor();
      await card(page, "CI pipeline").getByText(`…${secret.slice(-4)}`).waitFor();
      expect(await page.content()).not.toContain(secret);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a callback URL the API refuses is explained beside the field; nothing is created", async () => {
    const owner = await orgWithProject();
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      const form = page.locator("#new-integration form");
      await form.getByLabel("Kind").selectOption("signed_json");
      await form.getByLabel("Name").fill("Bad callback");
      await form.getByLabel("Callback URL").fill("ftp://ci.example.com/hook");
      await form.getByRole("button", { name: "Create integration" }).click();
      await expect(shownText(page, "#integration-callbackUrl-error")).resolves.not.toBe("");
      expect(await integrations(owner)).toEqual([]);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("disable and enable, rotate the secret (the old one stops at once, the new one works)", async () => {
    const owner = await orgWithProject();
    const made = (await s.api("POST", `/orgs/${owner.orgId}/integrations`, {
      token: owner.accessToken,
      body: { kind: "signed_json", name: "Deploys", projectId: (await s.api("GET", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken })).body.items[0].id },
    })).body as { id: string; secret: string };
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      const c = card(page, "Deploys");
      const saved = page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes(made.id));
      await c.getByLabel("Deploys enabled").uncheck();
      await c.getByText("Disabled").waitFor();
      expect((await saved).status()).toBe(200);
      expect((await integrations(owner))[0]!.enabled).toBe(false);
      await c.getByLabel("Deploys enabled").check();
      await c.getByText("Enabled").waitFor();

      await c.getByRole("button", { name: "Rotate secret" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Yes, rotate" }).click();
      const fresh = await page.locator(`#rotated-${made.id}-value`).inputValue();
      expect(fresh).toStartWith("aos_");
      expect(fresh).not.toBe(made.secret);
      expect((await integrations(owner))[0]!.enabled).toBe(true);
      expect((await signedDelivery(made.id, made.secret)).status).toBe(401);
      expect((await signedDelivery(made.id, fresh)).status).toBe(201);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the new integration's secret box goes when that integration's secret is rotated or it is deleted (another's rotation leaves it)", async () => {
    const owner = await orgWithProject();
    const projectId = (await s.api("GET", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken })).body.items[0].id;
    const other = (await s.api("POST", `/orgs/${owner.orgId}/integrations`, { token: owner.accessToken, body: { kind: "signed_json", name: "Deploys", projectId } })).body as { id: string };
    const box = (page: Page) => page.locator("#created-integration");
    const create = async (page: Page, name: string) => {
      const form = page.locator("#new-integration form");
      await form.getByLabel("Kind").selectOption("signed_json");
      await form.getByLabel("Name").fill(name);
      await form.getByRole("button", { name: "Create integration" }).click();
      await box(page).getByText(`${name} created. Its secret:`).waitFor();
      return { secret: await page.locator("#integration-secret-value").inputValue(), id: (await integrations(owner)).find((i) => i.name === name)!.id };
    };
    const confirm = async (page: Page, name: string, button: string, yes: string) => {
      const answered = page.waitForResponse((r) => r.url().includes("/integrations/") && ["POST", "DELETE"].includes(r.request().method()));
      await card(page, name).getByRole("button", { name: button }).click();
      await page.getByRole("dialog").getByRole("button", { name: yes }).click();
      expect((await answered).ok()).toBe(true);
    };
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      await card(page, "Deploys").waitFor();
      const ci = await create(page, "ci");
      // Another integration's new secret: the box still shows ci's, which still works.
      await confirm(page, "Deploys", "Rotate secret", "Yes, rotate");
      await page.locator(`#rotated-${other.id}-value`).waitFor();
      await expect(page.locator("#integration-secret-value").inputValue()).resolves.toBe(ci.secret);
      // ci's own: the box with its dead secret goes; the card shows the new one.
      await confirm(page, "ci", "Rotate secret", "Yes, rotate");
      const fresh = await page.locator(`#rotated-${ci.id}-value`).inputValue();
      expect(fresh).not.toBe(ci.secret);
      await box(page).waitFor({ state: "detached" });
      expect((await signedDelivery(ci.id, ci.secret)).status).toBe(401);

      const nightly = await create(page, "nightly");
      await confirm(page, "nightly", "Delete", "Yes, delete");
      await card(page, "nightly").waitFor({ state: "detached" });
      await box(page).waitFor({ state: "detached" });
      await expect(page.getByText(nightly.id).count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the delivery log shows each delivery with its tries; Redeliver sends it again (the receiver gets it, the log counts the try)", async () => {
    const owner = await orgWithProject();
    const rx = new Receiver();
    receivers.push(rx);
    const projectId = (await s.api("GET", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken })).body.items[0].id;
    const made = (await s.api("POST", `/orgs/${owner.orgId}/integrations`, { token: owner.accessToken, body: { kind: "signed_json", name: "CI", projectId, callbackUrl: rx.url() } })).body;
    const task = (await signedDelivery(made.id, made.secret, "Nightly")).body.taskId as string;
    await putInState(s, task, "running");
    await putInState(s, task, "completed");
    await rx.waitFor(1);
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      const c = card(page, "CI");
      await c.getByRole("button", { name: "Deliveries" }).click();
      const d = c.locator(".delivery").first();
      await d.locator(".delivery-status", { hasText: "succeeded" }).waitFor();
      expect(await d.locator(".try").allTextContents()).toEqual([expect.stringContaining("HTTP 200")]);
      await expect(d.getByRole("link", { name: "task" }).getAttribute("href")).resolves.toBe(`/tasks/${task}`);

      await d.getByRole("button", { name: "Redeliver" }).click();
      await rx.waitFor(2);
      expect(rx.requests[1]!.headers["x-svc-delivery"]).toBe(rx.requests[0]!.headers["x-svc-delivery"]);
      await c.getByRole("button", { name: "Refresh" }).click();
      await d.locator(".try").nth(1).waitFor();
      const log = (await s.api("GET", `/orgs/${owner.orgId}/integrations/${made.id}/deliveries`, { token: owner.accessToken })).body.items;
      expect(log[0].attempts).toBe(2);
      // Filtered by status: none failed; succeeded shows it again.
      await c.locator(".delivery-filter").selectOption("failed");
      await c.getByText("No failed deliveries.").waitFor();
      await c.locator(".delivery-filter").selectOption("succeeded");
      await c.locator(".delivery .delivery-status", { hasText: "succeeded" }).waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("the completion webhook: set up (its secret shown once), then its delivery log", async () => {
    const owner = await orgWithProject();
    const rx = new Receiver();
    receivers.push(rx);
    await steps(async ({ page, problems }) => {
      await open(page, owner);
      const form = page.locator("#plugin-form");
      await form.getByLabel("Webhook URL").fill(rx.url("/done"));
      await form.getByRole("button", { name: "Set up webhook" }).click();
      const secret = await page.locator("#plugin-secret-value").inputValue();
      expect(secret).toStartWith("aos_");
      const plugin = (await s.api("GET", `/orgs/${owner.orgId}/plugins/completion-webhook`, { token: owner.accessToken })).body;
      expect([plugin.url, plugin.enabled, plugin.secretLast4]).toEqual([rx.url("/done"), true, secret.slice(-4)]);
      await page.locator("#completion-webhook").getByRole("button", { name: "Deliveries" }).click();
      await page.locator("#completion-webhook").getByText("No deliveries yet.").waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a member is told only owners and admins manage integrations; nothing of them is shown", async () => {
    const owner = await orgWithProject();
    await s.api("POST", `/orgs/${owner.orgId}/integrations`, {
      token: owner.accessToken,
      body: { kind: "github", name: "secret-repo", projectId: (await s.api("GET", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken })).body.items[0].id },
    });
    const member = await addMember(s, owner, "member");
    await steps(async ({ page, problems }) => {
      await open(page, member);
      await page.getByText("Only owners and admins see and manage integrations").waitFor();
      await expect(page.getByText("secret-repo").count()).resolves.toBe(0);
      await expect(page.getByRole("button", { name: "Create integration" }).count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("screenshot and the phone layout", async () => {
    const owner = await orgWithProject();
    const projectId = (await s.api("GET", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken })).body.items[0].id;
    await s.api("POST", `/orgs/${owner.orgId}/integrations`, { token: owner.accessToken, body: { kind: "github", name: "acme/shop", projectId, config: { label: "ao" } } });
    await s.api("POST", `/orgs/${owner.orgId}/integrations`, { token: owner.accessToken, body: { kind: "signed_json", name: "CI pipeline", projectId } });
    await steps(
      async ({ page, problems }) => {
        await open(page, owner);
        await card(page, "acme/shop").waitFor();
        await docsScreenshot(page, "integrations");
        expect(problems).toEqual([]);
      },
      DESKTOP,
    );
    // A name of 100 characters without a space (the longest there is) wraps on a phone.
    const long = "nightly-".padEnd(100, "x");
    await s.api("POST", `/orgs/${owner.orgId}/integrations`, { token: owner.accessToken, body: { kind: "signed_json", name: long, projectId } });
    await steps(
      async ({ page, problems }) => {
        await open(page, owner);
        await card(page, "acme/shop").waitFor();
        await card(page, long).waitFor();
        expect(await overflowsSideways(page)).toBe(false);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, MANAGE_TEST_MS);
});
