// The projects pages "/projects" and "/projects/:projectId" (SPEC §8, §11): create a project with
// its repository, add another by URL (a bad URL is explained beside the field), rename, branch,
// primary, move, split, remove, clone to a worker (the worker's socket gets the request); the
// knowledge and policy form; readiness and usage empty states; a viewer only reads.
import { afterAll, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { TestServer } from "../helpers/server";
import { addMember, newOrg, type Session } from "../helpers/identity";
import type { ProtocolClient } from "../workers/helpers";
import { recordUsage } from "../../src/modules/usage/service";
import { PHONE, describeBrowser, openSignedIn, overflowsSideways, shownText, webSuite } from "./browser";
import { MANAGE_TEST_MS, PASSWORD, connectWorker, manageSteps, openAs, pairWorker } from "./manage-fixtures";

type Project = { id: string; name: string; knowledge: string; policy: Record<string, unknown>; repositories: { id: string; url: string; name: string; branch: string; primary: boolean }[] };

describeBrowser("web: projects pages", () => {
  let s: TestServer;
  let browser: Browser;
  const steps = manageSteps(() => browser);
  const sockets: ProtocolClient[] = [];
  webSuite((up) => ({ s, browser } = up));
  afterAll(async () => {
    for (const c of sockets) c.close();
  });

  const projects = async (o: Session) => (await s.api("GET", `/orgs/${o.orgId}/projects`, { token: o.accessToken })).body.items as Project[];
  const project = async (o: Session, id: string) => (await s.api("GET", `/orgs/${o.orgId}/projects/${id}`, { token: o.accessToken })).body as Project;
  const makeProject = async (o: Session, name: string, extra: Record<string, unknown> = {}) => {
    const r = await s.api("POST", `/orgs/${o.orgId}/projects`, { token: o.accessToken, body: { name, ...extra } });
    expect(r.status).toBe(201);
    return r.body as Project;
  };
  const repo = (page: Page, name: string) => page.locator(".repository", { has: page.locator(".repo-name", { hasText: new RegExp(`^${name}$`) }) });
  const confirm = (page: Page, label: string) => page.getByRole("dialog").getByRole("button", { name: label }).click();

  test("create a project with its repository from the list, then add a second by URL (a bad URL is refused beside the field)", async () => {
    const owner = await newOrg(s);
    await steps(async ({ page, problems }) => {
      await openSignedIn(page, `${s.url}/projects`, owner.email, PASSWORD, "Sign in to see the projects.");
      await page.locator("#projects-empty").getByText("No project yet.").waitFor();
      const form = page.locator("#project-form");
      await form.getByLabel("Project name").fill("shop");
      await form.getByLabel("Repository URL").fill("https://github.com/acme/shop.git");
      await form.getByRole("button", { name: "Create project" }).click();
      await page.waitForURL(/\/projects\/prj_/);
      const id = new URL(page.url()).pathname.split("/").pop()!;
      await repo(page, "shop").locator(".badge", { hasText: "primary" }).waitFor();

      const add = page.locator("#repository-form");
      await add.getByLabel("Repository URL").fill("not a url");
      await add.getByRole("button", { name: "Add repository" }).click();
      await expect(shownText(page, "#repo-url-error")).resolves.not.toBe("");
      expect((await project(owner, id)).repositories).toHaveLength(1);

      await add.getByLabel("Repository URL").fill("git@github.com:acme/shop-docs.git");
      await add.getByLabel("Branch").fill("trunk");
      await add.getByRole("button", { name: "Add repository" }).click();
      await repo(page, "shop-docs").waitFor();
      const p = await project(owner, id);
      expect(p.repositories.map((r) => [r.name, r.url, r.branch, r.primary])).toEqual([
        ["shop", "https://github.com/acme/shop.git", "main", true],
        ["shop-docs", "git@github.com:acme/shop-docs.git", "trunk", false],
      ]);
      // A name taken by another project is explained beside the name.
      await page.goto(`${s.url}/projects`);
      await page.locator("#project-form").getByLabel("Project name").fill("shop");
      await page.locator("#project-form").getByRole("button", { name: "Create project" }).click();
      await expect(shownText(page, "#project-name-error")).resolves.toContain("already exists");
      expect(await projects(owner)).toHaveLength(1);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("repositories: rename and branch, make primary, move to another project, split, remove", async () => {
    const owner = await newOrg(s);
    const other = await makeProject(owner, "other");
    const p = await makeProject(owner, "monorepo", {
      repositories: [{ url: "https://git.example.com/a/api.git" }, { url: "https://git.example.com/a/web.git" }, { url: "https://git.example.com/a/ops.git" }, { url: "https://git.example.com/a/old.git" }],
    });
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${p.id}`);
      await repo(page, "web").getByRole("button", { name: "Rename or branch" }).click();
      await repo(page, "web").getByLabel("Name").fill("frontend");
      await repo(page, "web").getByLabel("Branch").fill("develop");
      await repo(page, "web").getByRole("button", { name: "Save" }).click();
      await repo(page, "frontend").locator(".branch", { hasText: "develop" }).waitFor();

      // The badge moves before the answer (optimistic): the project is read back once the PATCH answered.
      const madePrimary = page.waitForResponse((r) => r.request().method() === "PATCH" && (r.request().postData() ?? "").includes('"primary"'));
      await repo(page, "frontend").getByRole("button", { name: "Make primary" }).click();
      await repo(page, "frontend").locator(".badge", { hasText: "primary" }).waitFor();
      await repo(page, "api").getByRole("button", { name: "Make primary" }).waitFor();
      expect((await madePrimary).status()).toBe(200);
      let now = await project(owner, p.id);
      expect(now.repositories.filter((r) => r.primary).map((r) => [r.name, r.branch])).toEqual([["frontend", "develop"]]);

      await repo(page, "ops").getByRole("button", { name: "Move", exact: true }).click();
      await repo(page, "ops").getByLabel("Project to move it to").selectOption({ label: "other" });
      await repo(page, "ops").locator(".move").getByRole("button", { name: "Move", exact: true }).click();
      await repo(page, "ops").waitFor({ state: "detached" });
      expect((await project(owner, other.id)).repositories.map((r) => r.name)).toEqual(["ops"]);

      await repo(page, "old").getByRole("button", { name: "Remove" }).click();
      await confirm(page, "Yes, remove");
      await repo(page, "old").waitFor({ state: "detached" });
      now = await project(owner, p.id);
      expect(now.repositories.map((r) => r.name).sort()).toEqual(["api", "frontend"]);

      await repo(page, "api").getByRole("button", { name: "Split" }).click();
      await confirm(page, "Yes, split");
      await page.waitForURL((u) => u.pathname.startsWith("/projects/") && !u.pathname.endsWith(p.id));
      await page.locator("#project-name", { hasText: "api" }).waitFor();
      expect((await project(owner, p.id)).repositories.map((r) => r.name)).toEqual(["frontend"]);
      expect((await projects(owner)).map((x) => x.name).sort()).toEqual(["api", "monorepo", "other"]);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("clone to a worker: the worker's socket gets the request and the page shows it cloning", async () => {
    const owner = await newOrg(s);
    const p = await makeProject(owner, "cloned", { repositories: [{ url: "https://git.example.com/a/app.git" }] });
    const w = await pairWorker(s, owner, { name: "laptop" });
    const socket = await connectWorker(s, w.credential);
    sockets.push(socket);
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${p.id}`);
      await repo(page, "app").getByRole("button", { name: "Clone to workers" }).click();
      await repo(page, "app").getByLabel(/laptop/).check();
      await repo(page, "app").locator(".clone").getByRole("button", { name: "Clone" }).click();
      const msg = await socket.next("clone", () => true, 10_000);
      expect(msg.repositoryId ?? msg.repository?.id).toBe(p.repositories[0]!.id);
      await repo(page, "app").locator(".clone-status li", { hasText: "laptop" }).getByText("cloning").waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("readiness runs on the worker that has the project and shows its score and checks; a repository found on a worker joins the project", async () => {
    const owner = await newOrg(s);
    const p = await makeProject(owner, "ready", { repositories: [{ url: "https://git.example.com/a/app.git" }] });
    const w = await pairWorker(s, owner, { name: "builder" });
    const socket = await connectWorker(s, w.credential);
    sockets.push(socket);
    // The worker reports what its workspace holds: the project's repository, and one no project has.
    const reported = await s.api("POST", "/worker/repos", { token: w.credential, body: { repos: [{ path: "/ws/app", url: "https://git.example.com/a/app.git" }, { path: "/ws/tool", url: "https://git.example.com/a/tool.git", branch: "dev" }] } });
    expect(reported.body).toEqual({ known: 1, discovered: 1 });
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${p.id}`);
      await page.locator("#readiness-empty").waitFor();
      await page.getByRole("button", { name: "Run readiness check" }).click();
      const run = await socket.next("readiness", () => true, 10_000);
      expect([run.projectId, run.url]).toEqual([p.id, "https://git.example.com/a/app.git"]);
      await page.locator("#readiness-report .badge", { hasText: /queued|running/ }).waitFor();
      const done = await s.api("POST", `/worker/readiness/${run.runId}`, {
        token: w.credential,
        body: { status: "completed", score: 75, checks: [{ id: "tests", passed: true, detail: "bun test passes" }, { id: "agents-md", passed: false, detail: "no AGENTS.md" }], report: "# Readiness\nAdd an AGENTS.md." },
      });
      expect(done.status).toBe(200);
      // The page looks again while the run is pending, and shows the result.
      await page.locator("#readiness-score", { hasText: "75/100" }).waitFor();
      expect(await page.locator("#readiness-report .checks li").allTextContents()).toEqual(["pass tests bun test passes", "fail agents-md no AGENTS.md"]);
      await page.locator("#readiness-report .report", { hasText: "Add an AGENTS.md." }).waitFor();
      expect(problems).toEqual([]);
    });
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${p.id}`);
      const found = page.locator("#discovered li", { hasText: "tool" });
      await found.getByText("builder (/ws/tool)").waitFor();
      await found.getByRole("button", { name: "Add to ready" }).click();
      await repo(page, "tool").waitFor();
      expect((await project(owner, p.id)).repositories.map((r) => [r.url, r.branch])).toEqual([
        ["https://git.example.com/a/app.git", "main"],
        ["https://git.example.com/a/tool.git", "dev"],
      ]);
      expect((await s.api("GET", `/orgs/${owner.orgId}/discovered`, { token: owner.accessToken })).body.items).toEqual([]);
      // Removed again, it is found on the worker again, without a reload.
      await repo(page, "tool").getByRole("button", { name: "Remove" }).click();
      await confirm(page, "Yes, remove");
      await repo(page, "tool").waitFor({ state: "detached" });
      await found.getByText("builder (/ws/tool)").waitFor();
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("knowledge and policy: the form writes policy.agent, budget, pullRequests and preferredAgent, keeping other keys", async () => {
    const owner = await newOrg(s);
    const p = await makeProject(owner, "rules", { policy: { team: "payments" } });
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${p.id}`);
      const form = page.locator("#policy-form");
      await form.getByLabel("Knowledge").fill("Run bun test before you push.");
      await form.getByLabel("Allow", { exact: true }).fill("shell:bun test*\nedit");
      await form.getByLabel("Ask", { exact: true }).fill("network");
      await form.getByLabel("Anything else").selectOption("deny");
      await form.getByLabel("Per task (US$)").fill("2.5");
      await form.getByLabel("Per day (US$)").fill("40");
      await form.getByLabel("Pull requests").selectOption("draft");
      await form.getByLabel("Preferred agent").selectOption("claude");
      await form.getByRole("button", { name: "Save knowledge and policy" }).click();
      await form.getByText("Saved").waitFor();
      const saved = await project(owner, p.id);
      expect(saved.knowledge).toBe("Run bun test before you push.");
      expect(saved.policy).toEqual({
        team: "payments",
        agent: { allow: ["shell:bun test*", "edit"], ask: ["network"], default: "deny" },
        budget: { perTaskUsd: 2.5, perDayUsd: 40 },
        pullRequests: "draft",
        preferredAgent: "claude",
      });
      // Emptying a part removes it from the policy.
      await form.getByLabel("Per day (US$)").fill("");
      await form.getByLabel("Ask", { exact: true }).fill("");
      await form.getByRole("button", { name: "Save knowledge and policy" }).click();
      await form.getByText("Saved").waitFor();
      const after = (await project(owner, p.id)).policy;
      expect([after.budget, after.agent]).toEqual([{ perTaskUsd: 2.5 }, { allow: ["shell:bun test*", "edit"], default: "deny" }]);
      await page.reload();
      await expect(form.getByLabel("Per task (US$)").inputValue()).resolves.toBe("2.5");
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("a viewer reads projects but sees no form or button that changes them, and why; may start a readiness check (any member may); readiness and usage say what comes next", async () => {
    const owner = await newOrg(s);
    await makeProject(owner, "readonly", { repositories: [{ url: "https://git.example.com/a/r.git" }], knowledge: "Be careful." });
    const viewer = await addMember(s, owner, "viewer");
    await steps(async ({ page, problems }) => {
      await openAs(s, page, viewer, `/projects`);
      await page.locator("#projects-list").getByRole("link", { name: "readonly" }).click();
      await page.locator("#project-name", { hasText: "readonly" }).waitFor();
      await page.getByText("You are a viewer here").waitFor();
      for (const name of ["Add repository", "Rename or branch", "Remove", "Archive", "Save knowledge and policy"]) {
        await expect(page.getByRole("button", { name }).count()).resolves.toBe(0);
      }
      await page.getByRole("button", { name: "Run readiness check" }).waitFor();
      await expect(page.locator("#policy-form").getByLabel("Knowledge").inputValue()).resolves.toBe("Be careful.");
      await page.locator("#readiness-empty").waitFor();
      await page.locator("#usage-empty").waitFor();
      expect(problems).toEqual([]);
    });
    await steps(async ({ page, problems }) => {
      await openAs(s, page, viewer, `/projects`);
      await page.locator("#projects-list li").first().waitFor();
      await expect(page.locator("#project-form").count()).resolves.toBe(0);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("usage: a cost of $10 or more keeps its cents, in the total and on the day's bar", async () => {
    const owner = await newOrg(s);
    const p = await makeProject(owner, "costly");
    const t = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: { projectId: p.id, title: "Big refactor", prompt: "p" } });
    expect(t.status).toBe(201);
    const usage = { inputTokens: 120_000, outputTokens: 30_000, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 18.42, model: "claude-sonnet" };
    const { day } = await s.core.store.write(recordUsage(s.core, t.body.id, usage, () => {}));
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${p.id}`);
      await expect(shownText(page, "#usage-cost")).resolves.toBe("$18.42");
      await expect(page.locator("#usage rect title").allTextContents()).resolves.toContain(`${day}: $18.42, 150.0k tokens`);
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  test("archive and restore (owners and admins); another org's project is not found", async () => {
    const owner = await newOrg(s);
    const p = await makeProject(owner, "old-stuff");
    const stranger = await newOrg(s);
    await steps(async ({ page, problems }) => {
      await openAs(s, page, owner, `/projects/${p.id}`);
      await page.getByRole("button", { name: "Archive" }).click();
      await confirm(page, "Yes, archive");
      await page.locator("#project-page-title .badge", { hasText: "archived" }).waitFor();
      expect((await project(owner, p.id) as unknown as { archived: boolean }).archived).toBe(true);
      await page.getByRole("button", { name: "Restore" }).click();
      await page.getByRole("button", { name: "Archive" }).waitFor();
      expect((await project(owner, p.id) as unknown as { archived: boolean }).archived).toBe(false);
      expect(problems).toEqual([]);
    });
    await steps(async ({ page }) => {
      await openAs(s, page, stranger, `/projects/${p.id}`);
      await page.locator("#missing-text", { hasText: "There is no such project, or it is not in one of your organizations." }).waitFor();
    });
  }, MANAGE_TEST_MS);

  test("a link to a project of another of one's organizations opens it there; nothing is asked of no organization", async () => {
    const owner = await newOrg(s, "Home");
    const p = await makeProject(owner, "shared-link");
    const teammate = await newOrg(s, "Elsewhere");
    expect((await s.api("POST", `/orgs/${owner.orgId}/members`, { token: owner.accessToken, body: { email: teammate.email, role: "member" } })).status).toBe(201);
    await steps(async ({ page, problems }) => {
      const asked: string[] = [];
      page.on("request", (r) => void (r.url().includes("/api/v1/orgs/") && asked.push(new URL(r.url()).pathname)));
      // Working in their own organization, they follow a teammate's link.
      await openAs(s, page, teammate, `/tasks?org=${teammate.orgId}`);
      await page.waitForFunction((id) => (globalThis as any).document.querySelector("#org-switch")?.value === id, teammate.orgId);
      await page.goto(`${s.url}/projects/${p.id}`);
      await page.locator("#project-name", { hasText: "shared-link" }).waitFor();
      // The organization in use is now the project's.
      await page.waitForFunction((id) => (globalThis as any).document.querySelector("#org-switch")?.value === id, owner.orgId);
      expect(asked.filter((path) => path.startsWith("/api/v1/orgs/null"))).toEqual([]);
      // Switching back to their own organization there leaves the project for that one's projects.
      await page.locator("#org-switch").selectOption(teammate.orgId);
      await page.waitForURL(`${s.url}/projects`);
      await page.locator("#projects-page").waitFor();
      await expect(page.locator("main").textContent()).resolves.not.toContain("shared-link");
      expect(problems).toEqual([]);
    });
  }, MANAGE_TEST_MS);

  // The README's picture of a project is taken by github.test.ts, whose server has the GitHub app
  // (the repository form's GitHub part shows only there).
  test("the phone layout of a project and of the list", async () => {
    const owner = await newOrg(s, "Acme");
    const p = await makeProject(owner, "shop", {
      repositories: [{ url: "https://github.com/acme/shop.git" }, { url: "https://github.com/acme/shop-infra.git", branch: "release" }],
      knowledge: "A Bun + Preact storefront. Run `bun test` before pushing; never touch migrations/ by hand.",
      policy: { agent: { allow: ["shell:bun test*", "shell:bun run lint"], ask: ["network", "shell:git push*"], default: "ask" }, budget: { perTaskUsd: 5, perDayUsd: 50 }, pullRequests: "draft", preferredAgent: "claude" },
    });
    await makeProject(owner, "docs", { repositories: [{ url: "https://github.com/acme/docs.git" }] });
    // The longest name allowed, without a space: it wraps in the list and in the page's heading.
    const long = await makeProject(owner, "Storefront".padEnd(100, "0123456789"));
    await steps(
      async ({ page, problems }) => {
        await openAs(s, page, owner, `/projects/${p.id}`);
        await repo(page, "shop-infra").waitFor();
        expect(await overflowsSideways(page)).toBe(false);
        await page.goto(`${s.url}/projects`);
        await page.locator("#projects-list li").nth(2).waitFor();
        expect(await overflowsSideways(page)).toBe(false);
        await page.goto(`${s.url}/projects/${long.id}`);
        await page.locator("#project-name", { hasText: long.name }).waitFor();
        expect(await overflowsSideways(page)).toBe(false);
        expect(problems).toEqual([]);
      },
      PHONE,
    );
  }, MANAGE_TEST_MS);
});
