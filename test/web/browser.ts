// A real headless Chromium (Debian's package at /usr/bin/chromium) driven by playwright-core.
// CI installs it (.ci/run); there a missing browser is a failing test. On a developer's machine
// without it the browser tests are skipped, with a line saying so.
//
// Playwright's in-process driver loses the order of its messages under Bun; launchBrowser()
// restores it (see deliverInOrder). The tests of a file also run one after another (no
// test.concurrent), and the helpers listen to no network events: a failure report reads the
// page's own Resource Timing entries instead.
import { afterAll, beforeAll } from "bun:test";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { startTestServer, type TestServer } from "../helpers/server";
import { needing } from "../helpers/needs";
import { makeWorld, type World } from "../tasks/fixtures";

// What the tests do and read inside a page: signing in, titles, texts, screenshots, held answers.
export * from "./in-page";

export const CHROMIUM = "/usr/bin/chromium";

/** describe() for tests that need the browser. */
export const describeBrowser = needing(CHROMIUM, "chromium", "the web app's browser tests need Debian's chromium", "web").describe;

/** A browser suite's server and browser, started before its tests. */
export interface WebSuite {
  s: TestServer;
  browser: Browser;
}

/**
 * Starts a test server (with `options.server`, or what that function gives when the hook runs)
 * and a browser side by side before the suite's tests, hands both to `ready` (the suite keeps
 * them and prepares the rest: an admin, a world) and closes both after the tests.
 */
export function webSuite(ready: (suite: WebSuite) => unknown, options: { server?: Parameters<typeof startTestServer>[0] | (() => Parameters<typeof startTestServer>[0]); timeoutMs?: number } = {}) {
  let suite: WebSuite | undefined;
  beforeAll(async () => {
    const server = typeof options.server === "function" ? options.server() : options.server;
    const [s, browser] = await Promise.all([startTestServer(server), launchBrowser()]);
    suite = { s, browser };
    await ready(suite);
  }, options.timeoutMs);
  afterAll(async () => {
    await suite?.browser.close();
    await suite?.s.stop();
  });
}

/** A browser suite's server and browser, and the world made on that server. */
export interface WorldSuite extends WebSuite {
  w: World;
}

/** webSuite for the suites that need only a world (makeWorld: two orgs, their people, tokens and projects). */
export function worldSuite(ready: (suite: WorldSuite) => unknown) {
  webSuite(async (up) => ready({ ...up, w: await makeWorld(up.s) }));
}

export async function launchBrowser(): Promise<Browser> {
  // launch() gives every browser a fresh, temporary user-data directory.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  deliverInOrder(browser);
  return browser;
}

/** The driver's side of each in-process connection whose messages deliverInOrder queues. */
const fromDriver = new WeakMap<object, Queue>();

/**
 * playwright-core runs its driver in this process and hands each protocol message from one side
 * to the other in a setImmediate of its own. Under Bun, callbacks of setImmediate do not always
 * run in the order they were scheduled (seen here under load: message 1,253 handled before 1,252),
 * so the client saw a reply naming an object whose "create" had not arrived yet, or an event for
 * one already disposed: "Object with guid response@… was not bound in the connection" (the
 * waiting step then never settled) and "Cannot find object to frameReceived". Both directions
 * are rewired here through a queue that one scheduled drain empties in order.
 */
function deliverInOrder(browser: Browser) {
  const client = connectionOf(browser);
  const server = client.toImpl(client);
  if (fromDriver.has(client)) return;
  const replies = new Queue((message) => client.dispatch(message));
  fromDriver.set(client, replies);
  server.onmessage = (message) => replies.push(message);
  const calls = new Queue((message) => server.dispatch(message));
  client.onmessage = (message) => calls.push(message);
}

const connectionOf = (browser: Browser) => (browser as unknown as { _connection: InProcessEnd & { toImpl(x: unknown): InProcessEnd } })._connection;

/**
 * For the helpers' own test: what the browser's driver says to this process is kept back (every
 * call then stalls, as when a message went missing) until the answered function is called.
 */
export function stallDriver(browser: Browser): () => void {
  const replies = fromDriver.get(connectionOf(browser))!;
  replies.held = true;
  return () => {
    replies.held = false;
    replies.schedule();
  };
}

interface InProcessEnd {
  onmessage: (message: unknown) => void;
  dispatch(message: unknown): unknown;
}

class Queue {
  private messages: unknown[] = [];
  private scheduled = false;
  /** Messages wait (stallDriver) rather than being delivered. */
  held = false;

  constructor(private deliver: (message: unknown) => unknown) {}

  push(message: unknown) {
    this.messages.push(message);
    this.schedule();
  }

  schedule() {
    if (this.scheduled || this.held) return;
    this.scheduled = true;
    setImmediate(() => this.drain());
  }

  private drain() {
    this.scheduled = false;
    let failure: unknown = null;
    // Messages queued while draining are handled in this drain too, still in order.
    while (this.messages.length > 0 && !this.held) {
      try {
        void this.deliver(this.messages.shift());
      } catch (err) {
        failure ??= err;
      }
    }
    // As before, a message the client cannot handle is an uncaught error, but it no longer stops the ones after it.
    if (failure) throw failure;
  }
}

export interface OpenedPage {
  page: Page;
  context: BrowserContext;
  /** Console errors and uncaught exceptions of the page (expected API refusals left out). */
  problems: string[];
  close(): Promise<void>;
}

/** The window's size and, for a test of local times, the time zone (UTC when not given). */
export interface Viewport {
  width: number;
  height: number;
  timezoneId?: string;
}

/**
 * Opt-in: with AO_TEST_WEB_JITTER=N (milliseconds) in the environment, every page opened through
 * these helpers gets each answer of /api/v1/ after a random extra 0..N ms. Locally the server
 * answers a page's requests in the order it sent them; in CI (PostgreSQL, a busy machine) they
 * can arrive in any order, and a test that read text depending on the later one failed there
 * only. `AO_TEST_WEB_JITTER=300 bun test test/web` shows such races here. Off (0) by default.
 */
const JITTER_MS = Math.max(0, Number(process.env.AO_TEST_WEB_JITTER) || 0);

/**
 * Delays the answers, not the requests: the server sees them in the page's order and answers
 * with the state of that moment, so an older answer can still land after a newer one (the race
 * a page must survive). It wraps the page's fetch(), through which the app's one API client
 * (src/web/app/api.ts) calls: the request itself stays the browser's own (cookies, redirects,
 * bodies). Routing each answer through route.fetch() and route.fulfill() was tried first: under
 * Bun some of those requests never settled (a sign-in, the refresh after a reload) and whole
 * files hung. The live socket is not delayed.
 */
async function delayApiAnswers(context: BrowserContext, maxMs: number) {
  await context.addInitScript(`(() => {
    const native = window.fetch;
    window.fetch = (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input), location.href);
      const answer = native(input, init);
      if (!url.pathname.startsWith("/api/v1/")) return answer;
      const wait = () => new Promise((resolve) => setTimeout(resolve, Math.random() * ${maxMs}));
      return answer.then((res) => wait().then(() => res), (err) => wait().then(() => Promise.reject(err)));
    };
  })()`);
}

/** How long opening a page and closing it may take before usePage says which call stalled. */
export interface Bounds {
  openMs: number;
  closeMs: number;
}

/**
 * The steps' deadline (CI runs these on 2 shared cores beside other suites: a page step can take
 * seconds there). With the bounds of opening and closing it stays under the tests' own timeouts:
 * a call that never settles would otherwise hang until Bun ends the test and, with it, the file's
 * browser (the file's next tests then fail with no word of why).
 */
const DEADLINE_MS = 50_000;
const BOUNDS: Bounds = { openMs: 15_000, closeMs: 10_000 };

/** A browser call that did not settle in time. */
export class Stalled extends Error {}

/** `promise`, or a Stalled error naming `what()` once `ms` have passed without it settling. */
async function within<T>(promise: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: Timer | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Stalled(`${what()} did not finish within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A new browser context (own cookies) with one page, the problems of its pages (later tabs too)
 * recorded. An opening that stalls fails after `openMs`, naming the call it waits for.
 */
export async function openPage(browser: Browser, viewport?: Viewport, openMs = BOUNDS.openMs): Promise<OpenedPage> {
  const step = { now: "" };
  const opening = newPage(browser, viewport, step);
  try {
    return await within(opening, openMs, () => `opening a page (${step.now})`);
  } catch (err) {
    // Should it open after all, it is closed then.
    if (err instanceof Stalled) void opening.then((o) => o.close()).catch(() => {});
    throw err;
  }
}

async function newPage(browser: Browser, { timezoneId = "UTC", ...viewport }: Viewport = { width: 900, height: 760 }, step: { now: string }): Promise<OpenedPage> {
  step.now = "browser.newContext()";
  const context = await browser.newContext({ viewport, locale: "en-GB", timezoneId });
  step.now = "context.addInitScript()";
  if (JITTER_MS > 0) await delayApiAnswers(context, JITTER_MS);
  // Generous: the machine may be busy with other suites; a real failure still ends the test.
  context.setDefaultTimeout(15_000);
  // A first load (the API reference's large bundle, say) took longer than 15 s on a loaded machine.
  context.setDefaultNavigationTimeout(30_000);
  const problems: string[] = [];
  // A broken rule of the page's Content-Security-Policy (an inline style, say) is a page problem.
  await context.addInitScript(`document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber))`);
  // Every page of the context: a tab a link opened, or one a test opened itself.
  context.on("page", (page) => {
    page.on("pageerror", (err) => problems.push(`uncaught: ${err.message}`));
    page.on("console", (msg) => {
      // A 401 of the session check or a 4xx the page shows to the person is not a page bug.
      if (msg.type() === "error" && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(msg.text())) {
        problems.push(msg.text());
      }
    });
  });
  step.now = "context.newPage()";
  const page = await context.newPage();
  return { page, context, problems, close: () => context.close() };
}

/**
 * Opens a page (openPage), runs `work` with it and closes its context whatever happens. A failure
 * says what each page of the context showed at that moment and what it last asked the server,
 * so that a failed run (in CI, say) explains itself. Opening, the steps and closing each have a
 * time limit, so that a call that never settles fails this test with its name, and the file's
 * next tests still run.
 */
export async function usePage<T>(browser: Browser, work: (opened: OpenedPage) => Promise<T>, viewport?: Viewport, deadlineMs = DEADLINE_MS, bounds: Partial<Bounds> = {}): Promise<T> {
  const { openMs, closeMs } = { ...BOUNDS, ...bounds };
  const opened = await openPage(browser, viewport, openMs);
  const close = () => within(opened.close(), closeMs, () => `closing the page (${opened.context.pages().map((p) => p.url()).join(", ") || "none left"})`);
  let result: T;
  try {
    result = await within(work(opened), deadlineMs, () => "the browser steps");
  } catch (err) {
    const report = await pageReport(opened);
    if (err instanceof Error) err.message = `${err.message}\n${report}`;
    // The steps' failure is the one to report; a close that stalls too is said after it.
    await close().catch((stalled) => {
      if (stalled instanceof Stalled && err instanceof Error) err.message += `\nthen: ${stalled.message}`;
    });
    throw err;
  }
  // A close that stalls fails the test; one that fails otherwise (the browser gone, say) is let be, as before.
  await close().catch((err) => {
    if (err instanceof Stalled) throw err;
  });
  return result;
}

/** What the context's pages show (address, visible sections, alerts) and its last requests. */
async function pageReport({ context, problems }: OpenedPage): Promise<string> {
  const lines = ["-- the browser at the failure:"];
  for (const p of context.pages()) {
    const shown = await Promise.race([
      p
        .evaluate<{ sections: string[]; alerts: string[]; requests: string[] }>(`(() => {
          const visible = (sel) => [...document.querySelectorAll(sel)].filter((e) => !e.hidden && e.offsetParent !== null);
          return {
            sections: visible("main > section, #loading, section.page").map((e) => e.id),
            alerts: visible("[role=alert], .error").map((e) => "#" + e.id + ": " + e.textContent.trim()),
            // The browser's own record of what this document fetched (Resource Timing).
            requests: performance.getEntriesByType("resource").slice(-15).map((e) => new URL(e.name).pathname + " -> " + (e.responseStatus || "?") + " in " + Math.round(e.duration) + " ms"),
          };
        })()`)
        .catch((e: Error) => ({ sections: [], alerts: [`(could not read the page: ${e.message.split("\n")[0]})`], requests: [] })),
      Bun.sleep(2000).then(() => ({ sections: [], alerts: ["(the page did not answer within 2 s)"], requests: [] })),
    ]);
    lines.push(`page ${p.url()}: showing ${shown.sections.join(", ") || "no section"}${shown.alerts.length ? `; ${shown.alerts.join("; ")}` : ""}`);
    lines.push(...shown.requests.map((r) => `  fetched ${r}`));
  }
  if (problems.length) lines.push(`console: ${problems.join(" | ")}`);
  return lines.join("\n");
}
