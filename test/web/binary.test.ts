// The links the compiled executable prints work in a browser: `ao serve` (built by
// scripts/build.ts, run from an empty directory) prints its setup link, the page (embedded in the
// executable) creates the administrator, and the link `ao login` prints signs the command line in.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { describeBrowser, launchBrowser, usePage } from "./browser";
import { inheritedEnv } from "../helpers/processes";

const root = join(import.meta.dir, "..", "..");
// These scenarios read the log's lines as a person would (pretty); test/e2e/observe.test.ts reads the JSON.
const baseEnv = { ...inheritedEnv("XDG_CONFIG_HOME"), AO_LOG_FORMAT: "pretty" };

/** Reads a child's stream into a string that `until` can wait on. */
function collect(stream: ReadableStream<Uint8Array>) {
  let text = "";
  const decoder = new TextDecoder();
  const done = (async () => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  })();
  return {
    done,
    text: () => text,
    async until(re: RegExp, timeoutMs = 15_000): Promise<RegExpMatchArray> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = re.exec(text);
        if (m) return m;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\n${text}`);
        await Bun.sleep(20);
      }
    },
  };
}

describeBrowser("web: the compiled executable's printed links", () => {
  let tmp: string;
  let ao: string;
  let browser: Browser;
  let serve: Bun.Subprocess<"ignore", "pipe", "pipe"> | undefined;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "ao-web-binary-"));
    ao = join(tmp, "bin", "ao");
    const build = Bun.spawn([process.execPath, join(root, "scripts", "build.ts"), ao], { cwd: root, stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([build.exited, new Response(build.stderr).text()]);
    if (code !== 0) throw new Error(`scripts/build.ts failed (exit ${code}):\n${err}`);
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    serve?.kill();
    await serve?.exited;
    await browser?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("setup link, then ao login's link, against the executable", async () => {
    const cwd = join(tmp, "run");
    mkdirSync(cwd);
    serve = Bun.spawn([ao, "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "data"], { cwd, env: baseEnv, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const log = collect(serve.stderr);
    const [, setupLink] = await log.until(/finish setup at (http:\/\/\S+\/setup\?token=\S+)/);
    const [, url] = await log.until(/listening on (http:\/\/\S+)/);
    expect(setupLink).toStartWith(`${url}/setup?token=`);

    await usePage(browser, async ({ page, problems }) => {
      await page.goto(setupLink!);
      await page.getByLabel("Email").fill("root@example.test");
      await page.getByLabel("Password", { exact: true }).fill("a long enough password");
      await page.getByLabel("Password again").fill("a long enough password");
      await page.getByRole("button", { name: "Create administrator" }).click();
      await page.getByRole("heading", { name: "Welcome" }).waitFor();
      await expect(page.locator("#home-orgs").textContent()).resolves.toBe("default owner");

      const login = Bun.spawn([ao, "login", "--server", url!], {
        cwd,
        env: { ...baseEnv, AO_CONFIG_DIR: join(tmp, "config") },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      const out = collect(login.stdout);
      const err = collect(login.stderr);
      try {
        const [deviceLink] = await out.until(/http:\S+\/device\?code=[B-Z]{4}-[B-Z]{4}/);
        // A second tab of the signed-in browser: no sign-in needed there.
        const tab = await page.context().newPage();
        await tab.goto(deviceLink);
        await tab.getByRole("button", { name: "Approve" }).click();
        await tab.getByRole("heading", { name: "Device signed in" }).waitFor();
        expect(await login.exited).toBe(0);
        await Promise.all([out.done, err.done]);
        expect(err.text()).toBe("");
        expect(out.text()).toContain(`Signed in to ${url} as root@example.test, organization default`);
      } finally {
        login.kill();
      }
      expect(problems).toEqual([]);
    });
  }, 90_000);
});

