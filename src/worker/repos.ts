// The workspace: clones the server asks for, and the git repositories found under it (reported so
// the server can mark which belong to projects and list the rest as discovered).
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { CloneRequest } from "../protocol/messages";
import { normalizeRepoUrl } from "../protocol/repo-url";
import type { WorkerClient } from "./client";
import { git, gitOk, type GitAuth } from "./git";

export interface FoundRepo {
  path: string;
  url: string;
  branch?: string;
}

const SKIP = new Set(["node_modules", ".git", "vendor", "target", "dist", "build", ".venv"]);

/** Git repositories (with an origin remote) under the workspace, down to `depth` levels. */
export async function scanWorkspace(workspace: string, depth = 3): Promise<FoundRepo[]> {
  const found: FoundRepo[] = [];
  async function visit(dir: string, level: number) {
    if (existsSync(join(dir, ".git"))) {
      const url = await git(["remote", "get-url", "origin"], dir, 10_000);
      if (url.code === 0 && url.stdout) {
        const branch = await git(["rev-parse", "--abbrev-ref", "HEAD"], dir, 10_000);
        found.push({ path: dir, url: url.stdout, ...(branch.code === 0 && branch.stdout !== "HEAD" ? { branch: branch.stdout } : {}) });
      }
      return; // nested repositories (submodules) belong to their parent
    }
    if (level >= depth) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory() && !SKIP.has(e.name) && !e.name.startsWith(".")) await visit(join(dir, e.name), level + 1);
  }
  if (existsSync(workspace)) await visit(workspace, 0);
  return found;
}

/** The clone of a remote in the workspace, if there is one. */
export async function findClone(workspace: string, url: string): Promise<string | null> {
  const wanted = normalizeRepoUrl(url);
  for (const r of await scanWorkspace(workspace)) if (normalizeRepoUrl(r.url) === wanted) return r.path;
  return null;
}

/** Clones (or, when already there, fetches) a repository into the workspace; returns its path. */
export async function cloneIntoWorkspace(workspace: string, req: Pick<CloneRequest, "url" | "branch" | "name" | "repositoryId" | "token">): Promise<string> {
  mkdirSync(workspace, { recursive: true });
  const auth: GitAuth | null = req.token ? { url: req.url, token: req.token } : null;
  const existing = await findClone(workspace, req.url);
  if (existing) {
    await gitOk(["fetch", "--quiet", "--", "origin"], existing, undefined, { auth });
    return existing;
  }
  const base = req.name.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[.-]+/, "") || "repository";
  let target = join(workspace, base);
  if (existsSync(target)) target = join(workspace, `${base}-${req.repositoryId.slice(-6)}`);
  const branched = await git(["clone", "--quiet", "--branch", req.branch, "--", req.url, target], workspace, undefined, { auth });
  if (branched.code !== 0) await gitOk(["clone", "--quiet", "--", req.url, target], workspace, undefined, { auth });
  return target;
}

export async function handleClone(client: WorkerClient, workspace: string, req: CloneRequest, log: (l: string) => void) {
  try {
    const path = await cloneIntoWorkspace(workspace, req);
    log(`cloned ${req.url} into ${path}`);
    await client.reportClone(req.repositoryId, { ok: true, path });
  } catch (err) {
    log(`clone of ${req.url} failed: ${(err as Error).message}`);
    await client.reportClone(req.repositoryId, { ok: false, error: (err as Error).message }).catch(() => {});
  }
}

export async function reportWorkspace(client: WorkerClient, workspace: string) {
  const repos = await scanWorkspace(workspace);
  await client.reportRepos({ repos: repos.slice(0, 1000) });
}
