// Real git repositories behind git's own smart-HTTP server (git-http-backend as a CGI), so
// clones, fetches and pushes against the stand-in run the real protocol end to end.
import { cpSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const HTTP_BACKEND = "/usr/lib/git-core/git-http-backend";
const IDENTITY = {
  GIT_AUTHOR_NAME: "GitHub",
  GIT_AUTHOR_EMAIL: "noreply@github.com",
  GIT_COMMITTER_NAME: "GitHub",
  GIT_COMMITTER_EMAIL: "noreply@github.com",
};

export function git(cwd: string, args: string[], input?: string): string {
  const r = Bun.spawnSync(["git", ...args], {
    cwd,
    env: { ...process.env, ...IDENTITY, GIT_CONFIG_NOSYSTEM: "1" },
    stdin: input === undefined ? "ignore" : Buffer.from(input),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** Makes the bare repository `root/owner/name.git`, with a first commit when `files` are given. */
export function createBareRepository(root: string, owner: string, name: string, branch: string, files?: Record<string, string>) {
  const dir = join(root, owner, `${name}.git`);
  if (existsSync(dir)) throw new Error(`${dir} exists`);
  // an empty bare repository is copied from one made once per root: 150 of them in a test
  // installation would otherwise be 150 `git init`s
  const template = join(root, `.template-${branch}.git`);
  if (!existsSync(template)) {
    mkdirSync(template, { recursive: true });
    git(template, ["init", "--bare", "--quiet", "-b", branch]);
  }
  cpSync(template, dir, { recursive: true });
  if (files && Object.keys(files).length) commitFiles(dir, branch, files, "Initial commit");
  return dir;
}

/** Commits `files` on top of `branch` of a bare repository with git's plumbing (no work tree). */
export function commitFiles(dir: string, branch: string, files: Record<string, string>, message: string): string {
  const parent = refSha(dir, branch);
  const entries = new Map<string, string>();
  if (parent) {
    for (const line of git(dir, ["ls-tree", "-r", parent]).split("\n").filter(Boolean)) {
      const [meta, path] = line.split("\t");
      entries.set(path!, meta!);
    }
  }
  for (const [path, content] of Object.entries(files)) {
    const sha = git(dir, ["hash-object", "-w", "--stdin"], content);
    entries.set(path, `100644 blob ${sha}`);
  }
  // mktree takes one level; nested paths go through a temporary index instead
  const index = join(dir, `index-${process.pid}-${Date.now()}`);
  const env = { GIT_INDEX_FILE: index };
  const run = (args: string[], input?: string) => {
    const r = Bun.spawnSync(["git", ...args], {
      cwd: dir,
      env: { ...process.env, ...IDENTITY, ...env },
      stdin: input === undefined ? "ignore" : Buffer.from(input),
      stdout: "pipe",
      stderr: "pipe",
    });
    if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr.toString()}`);
    return r.stdout.toString().trim();
  };
  const list = [...entries].map(([path, meta]) => `${meta}\t${path}`).join("\n") + "\n";
  run(["update-index", "--add", "--index-info"], list);
  const tree = run(["write-tree"]);
  Bun.spawnSync(["rm", "-f", index]);
  const commit = git(dir, ["commit-tree", tree, ...(parent ? ["-p", parent] : []), "-m", message]);
  git(dir, ["update-ref", `refs/heads/${branch}`, commit]);
  return commit;
}

export function refSha(dir: string, branch: string): string | null {
  const r = Bun.spawnSync(["git", "rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0 ? r.stdout.toString().trim() : null;
}

/** Which git service a smart-HTTP request is for: reading (clone, fetch) or writing (push). */
export function gitService(path: string, query: URLSearchParams): "upload-pack" | "receive-pack" | null {
  if (path.endsWith("/info/refs")) {
    const s = query.get("service");
    return s === "git-upload-pack" ? "upload-pack" : s === "git-receive-pack" ? "receive-pack" : null;
  }
  if (path.endsWith("/git-upload-pack")) return "upload-pack";
  if (path.endsWith("/git-receive-pack")) return "receive-pack";
  return null;
}

/** Runs git-http-backend for one request: the body streams into it, its output streams back. */
export async function serveGit(req: Request, root: string, pathInfo: string, remoteUser: string): Promise<Response> {
  const url = new URL(req.url);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: "1",
    GIT_CONFIG_NOSYSTEM: "1",
    PATH_INFO: pathInfo,
    REQUEST_METHOD: req.method,
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: req.headers.get("content-type") ?? "",
    REMOTE_USER: remoteUser,
    REMOTE_ADDR: "127.0.0.1",
    SERVER_PROTOCOL: "HTTP/1.1",
  };
  const length = req.headers.get("content-length");
  if (length) env.CONTENT_LENGTH = length;
  const encoding = req.headers.get("content-encoding");
  if (encoding) env.HTTP_CONTENT_ENCODING = encoding;
  const protocol = req.headers.get("git-protocol");
  if (protocol) env.GIT_PROTOCOL = protocol;

  const proc = Bun.spawn([HTTP_BACKEND], {
    env,
    stdin: req.body ? req.body : "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  void new Response(proc.stderr).text();

  // CGI output: header lines, a blank line, then the body, which may be large: read only the head
  const reader = proc.stdout.getReader();
  let head = new Uint8Array(0);
  let split = -1;
  while (split < 0) {
    const { value, done } = await reader.read();
    if (done) break;
    const next = new Uint8Array(head.length + value.length);
    next.set(head);
    next.set(value, head.length);
    head = next;
    split = findHeaderEnd(head);
  }
  if (split < 0) {
    await proc.exited;
    return new Response("git-http-backend gave no answer", { status: 500 });
  }
  const headerText = new TextDecoder().decode(head.subarray(0, split.valueOf()));
  const rest = head.subarray(split + (head[split] === 13 ? 4 : 2));
  const headers = new Headers();
  let status = 200;
  for (const line of headerText.split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    const k = line.slice(0, i).trim();
    const v = line.slice(i + 1).trim();
    if (k.toLowerCase() === "status") status = parseInt(v, 10);
    else headers.append(k, v);
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (rest.length) controller.enqueue(rest);
    },
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel() {
      proc.kill();
    },
  });
  return new Response(body, { status, headers });
}

function findHeaderEnd(b: Uint8Array): number {
  for (let i = 0; i + 1 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
    if (b[i] === 10 && b[i + 1] === 10) return i;
  }
  return -1;
}
