// What a test makes happen on GitHub: a person installing an app, a pull request merged, and
// webhooks, built from GitHub's recorded payloads and delivered signed as GitHub signs them.
import { randomUUID } from "node:crypto";
import { sign as signWebhook } from "@octokit/webhooks-methods";
import * as shapes from "./shapes";
import type { PullRecord } from "./shapes";
import { git, refSha } from "./git-http";
import { now, type Delivery, type Json, type StandInInstallation, type World } from "./world";
import type { GitHubStandIn } from "../github-standin";

export function scenario(w: World): Pick<GitHubStandIn, "install" | "merge" | "payloads" | "deliver"> {
  // ---- helpers for tests ---------------------------------------------------------------

  async function install(
    appSlug: string,
    login: string,
    opts: { repositories?: number | string[]; type?: "Organization" | "User"; selection?: "all" | "selected"; webhook?: boolean; state?: string } = {},
  ) {
    const a = w.app(appSlug);
    const target = w.account(login, { type: opts.type ?? "Organization", members: opts.type === "User" ? undefined : [w.signedIn.login] });
    if (typeof opts.repositories === "number") {
      const have = [...w.repos.values()].filter((r) => r.record.owner.login === target.login).length;
      for (let i = have; i < opts.repositories; i++) w.createRepository(target.login, `repo-${String(i + 1).padStart(3, "0")}`);
    } else if (Array.isArray(opts.repositories)) {
      for (const n of opts.repositories) if (!w.repos.has(w.repoKey(target.login, n))) w.createRepository(target.login, n, { files: { "README.md": `# ${n}\n` } });
    }
    const selection = opts.selection ?? (Array.isArray(opts.repositories) ? "selected" : "all");
    const ids =
      selection === "all"
        ? null
        : new Set(
            [...w.repos.values()]
              .filter((r) => r.record.owner.login === target.login && (!Array.isArray(opts.repositories) || opts.repositories.includes(r.record.name)))
              .map((r) => r.record.id),
          );
    const inst: StandInInstallation = {
      record: { id: w.id(), app: a.record, account: target, repositorySelection: selection, permissions: a.record.permissions, events: a.record.events, createdAt: now(), suspendedAt: null },
      repositoryIds: ids,
    };
    w.installations.set(inst.record.id, inst);
    const state = opts.state ?? a.installStates.shift() ?? null;
    let setupRedirect: string | null = null;
    if (a.setupUrl) {
      const to = new URL(a.setupUrl);
      to.searchParams.set("installation_id", String(inst.record.id));
      to.searchParams.set("setup_action", "install");
      if (state !== null) to.searchParams.set("state", state);
      setupRedirect = to.toString();
    }
    let delivery: Delivery | null = null;
    if (a.hookUrl && opts.webhook !== false) delivery = await deliver(a.hookUrl, "installation", payloads.installation(inst.record.id, "created"), { app: a.record.id });
    return { installation: inst, setupRedirect, delivery };
  }

  function merge(owner: string, name: string, number: number): PullRecord {
    const r = w.repos.get(w.repoKey(owner, name));
    const pr = r?.pulls.find((x) => x.number === number);
    if (!r || !pr) throw new Error(`no pull request ${owner}/${name}#${number}`);
    const head = refSha(r.dir, pr.head)!;
    const base = refSha(r.dir, pr.base)!;
    const ff = Bun.spawnSync(["git", "merge-base", "--is-ancestor", base, head], { cwd: r.dir }).exitCode === 0;
    const sha = ff ? head : git(r.dir, ["commit-tree", `${head}^{tree}`, "-p", base, "-p", head, "-m", `Merge pull request #${number} from ${owner}/${pr.head}`]);
    git(r.dir, ["update-ref", `refs/heads/${pr.base}`, sha]);
    Object.assign(pr, { state: "closed", headSha: head, closedAt: now(), mergedAt: now(), mergeCommitSha: sha, updatedAt: now() });
    return pr;
  }

  const payloads: GitHubStandIn["payloads"] = {
    installation(installationId, action) {
      const inst = w.installations.get(installationId);
      if (!inst) throw new Error(`no installation ${installationId}`);
      const p = shapes.webhookTemplate(w.hosts, "installation", action === "created" ? "created" : action === "deleted" ? "deleted" : action);
      p.action = action;
      p.installation = shapes.installation(w.hosts, inst.record);
      p.repositories = w.installationRepos(inst).map((r) => ({ id: r.record.id, node_id: shapes.nodeId("Repository", r.record.id), name: r.record.name, full_name: `${r.record.owner.login}/${r.record.name}`, private: r.record.private }));
      p.sender = shapes.simpleUser(w.hosts, w.signedIn);
      delete p.requester;
      return p;
    },
    installationRepositories(installationId, added, removed) {
      const inst = w.installations.get(installationId);
      if (!inst) throw new Error(`no installation ${installationId}`);
      const mini = (n: string) => {
        const r = w.repos.get(w.repoKey(inst.record.account.login, n));
        if (!r) throw new Error(`no repository ${inst.record.account.login}/${n}`);
        return { id: r.record.id, node_id: shapes.nodeId("Repository", r.record.id), name: r.record.name, full_name: `${r.record.owner.login}/${r.record.name}`, private: r.record.private };
      };
      const addedRepos = added.map(mini);
      const removedRepos = removed.map(mini);
      if (inst.repositoryIds) {
        for (const r of addedRepos) inst.repositoryIds.add(r.id);
        for (const r of removedRepos) inst.repositoryIds.delete(r.id);
      }
      const p = shapes.webhookTemplate(w.hosts, "installation_repositories", added.length ? "added" : "removed");
      p.installation = shapes.installation(w.hosts, inst.record);
      p.repository_selection = inst.record.repositorySelection;
      p.repositories_added = addedRepos;
      p.repositories_removed = removedRepos;
      p.sender = shapes.simpleUser(w.hosts, w.signedIn);
      delete p.requester;
      return p;
    },
    pullRequest(owner, name, number, action) {
      const r = w.repos.get(w.repoKey(owner, name));
      const pr = r?.pulls.find((x) => x.number === number);
      if (!r || !pr) throw new Error(`no pull request ${owner}/${name}#${number}`);
      const p = shapes.webhookTemplate(w.hosts, "pull_request", action === "reopened" ? "reopened" : action === "edited" ? "edited" : action);
      const inst = [...w.installations.values()].find((i) => w.installationRepos(i).includes(r));
      p.action = action;
      p.number = pr.number;
      p.pull_request = shapes.pullRequest(w.hosts, r.record, pr);
      p.repository = shapes.repository(w.hosts, r.record);
      p.sender = shapes.simpleUser(w.hosts, w.signedIn);
      if (inst) p.installation = { id: inst.record.id, node_id: shapes.nodeId("Installation", inst.record.id) };
      if (r.record.owner.type === "Organization") p.organization = shapes.simpleUser(w.hosts, r.record.owner);
      return p;
    },
  };

  async function deliver(webhookUrl: string, event: string, payload: Json, opts: { app?: string | number; secret?: string } = {}): Promise<Delivery> {
    const a = opts.app !== undefined ? w.app(opts.app) : w.apps.size === 1 ? [...w.apps.values()][0]! : null;
    const secret = opts.secret ?? a?.webhookSecret;
    if (!secret) throw new Error("deliver: which app's secret? pass opts.app or opts.secret");
    const text = JSON.stringify(payload);
    const deliveryId = randomUUID();
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/standin",
      "x-github-event": event,
      "x-github-delivery": deliveryId,
      "x-github-hook-id": String(a?.record.id ?? 0),
      "x-hub-signature-256": await signWebhook(secret, text),
    };
    if (a) {
      headers["x-github-hook-installation-target-id"] = String(a.record.id);
      headers["x-github-hook-installation-target-type"] = "integration";
    }
    const res = await fetch(webhookUrl, { method: "POST", headers, body: text });
    const d: Delivery = { url: webhookUrl, event, id: deliveryId, status: res.status, body: await res.text() };
    w.deliveries.push(d);
    return d;
  }

  return { install, merge, payloads, deliver };
}
