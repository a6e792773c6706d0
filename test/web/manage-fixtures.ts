// What the management pages' browser tests set up, all over the real HTTP API: workers paired by
// device code (as `ao worker` pairs) and, when a test needs one online, a worker socket that
// says hello with agents and tools; TOTP codes computed independently with otplib.
import { expect } from "bun:test";
import { generate } from "otplib";
import type { TestServer } from "../helpers/server";
import type { Session } from "../helpers/identity";
import type { Browser, Page } from "playwright-core";
import { usePage, type Viewport } from "./browser";
import { ProtocolClient } from "../workers/helpers";

export const PASSWORD = "correct horse battery staple";

export interface PairedWorker {
  workerId: string;
  credential: string;
  orgId: string;
}

/**
 * Pairs a worker into `who`'s org the way `ao worker` and a person do: POST /worker/pair, the
 * person's POST /pairing/approve, then the worker's poll that yields its credential.
 */
export async function pairWorker(s: TestServer, who: Session, opts: { name: string; labels?: string[]; hostname?: string }): Promise<PairedWorker> {
  const start = await s.api("POST", "/worker/pair", { body: { name: opts.name, hostname: opts.hostname ?? `${opts.name}.lan`, labels: opts.labels ?? [] } });
  expect(start.status).toBe(200);
  const approved = await s.api("POST", "/pairing/approve", { token: who.accessToken, body: { userCode: start.body.userCode, orgId: who.orgId } });
  expect(approved.status).toBe(200);
  const done = await s.api("POST", "/worker/pair/poll", { body: { deviceCode: start.body.deviceCode } });
  expect(done.status).toBe(200);
  expect(done.body.credential).toStartWith("aow_");
  return { workerId: done.body.workerId, credential: done.body.credential, orgId: done.body.orgId };
}

/** Connects the worker's socket and says hello as `ao worker` would, so it shows online with its agents and tools. */
export function connectWorker(s: TestServer, credential: string, hello: Record<string, unknown> = {}) {
  return ProtocolClient.connect(s, credential, {
    version: "0.1.0",
    tools: [
      { name: "git", version: "2.47.2" },
      { name: "bun", version: "1.4.5" },
    ],
    agents: [
      { name: "claude", version: "2.1.197" },
      { name: "exec", version: null, command: "make" },
    ],
    providers: ["ANTHROPIC_API_KEY"],
    capacity: 2,
    ...hello,
  });
}

export const worker = (s: TestServer, who: Pick<Session, "orgId" | "accessToken">, id: string) =>
  s.api("GET", `/orgs/${who.orgId}/workers/${id}`, { token: who.accessToken }).then((r) => r.body as { status: string; name: string; labels: string[]; revokedAt: string | null });

/**
 * The TOTP code of `secret` for the 30 s step `stepsAhead` steps after now. The server accepts one
 * step either way, so the current step's code and the next one's both survive a step boundary
 * crossed on the way to it (the previous step's code would not).
 */
export const totp = (secret: string, stepsAhead = 0) => generate({ secret, epoch: Math.floor(Date.now() / 1000) + 30 * stepsAhead });

/** The secret of an otpauth:// URL (RFC 6238 key URI). */
export const secretOf = (otpauthUrl: string) => {
  const url = new URL(otpauthUrl);
  expect(url.protocol).toBe("otpauth:");
  return url.searchParams.get("secret")!;
};

/**
 * The management pages' browser steps may take this long, below their tests' own timeout
 * (MANAGE_TEST_MS): each signs in and loads several lists, on CI's two shared cores.
 */
export const MANAGE_STEPS_MS = 55_000;
export const MANAGE_TEST_MS = 120_000;

/** usePage with the management pages' time limit, in the suite's browser (`browser()` when a test runs). */
export const manageSteps =
  (browser: () => Browser) =>
  <T,>(work: Parameters<typeof usePage<T>>[1], viewport?: Viewport) =>
    usePage(browser(), work, viewport, MANAGE_STEPS_MS);

/**
 * Opens `path` already signed in as `who`: signs in over HTTP as the web app does (x-client: web)
 * and gives the browser the resulting ao_refresh cookie, so the page restores the session as
 * after a reload. (Each test file's first test signs in through the form instead.)
 */
export async function openAs(s: TestServer, page: Page, who: Pick<Session, "email">, path: string) {
  const r = await s.api("POST", "/auth/login", { body: { email: who.email, password: PASSWORD }, headers: { "x-client": "web" } });
  expect(r.status).toBe(200);
  const cookie = /(?:^|[,;]\s*)ao_refresh=([^;]+)/.exec(r.headers.get("set-cookie") ?? "")?.[1];
  expect(cookie).toBeTruthy();
  await page.context().addCookies([{ name: "ao_refresh", value: cookie!, domain: new URL(s.url).hostname, path: "/api/v1/auth", httpOnly: true, sameSite: "Strict" }]);
  await page.goto(`${s.url}${path}`);
  await page.locator("section.page").first().waitFor();
}
