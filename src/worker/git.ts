// Running git: never prompting (a hung credential prompt would hang the attempt), output captured.
export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A repository's access token (a GitHub installation token) and the URL it is for. */
export interface GitAuth {
  url: string;
  token: string;
}

export interface GitOptions {
  /** Sent as HTTP Basic x-access-token:<token> to the repository's host only. */
  auth?: GitAuth | null;
  /** More environment for this one command (e.g. the commit's author). */
  env?: Record<string, string>;
}

/**
 * The environment that gives git a token for one command: an `http.<origin>/.extraHeader` entry
 * through GIT_CONFIG_COUNT/KEY/VALUE (appended after any the worker's own environment has), so the
 * token is never in a URL, argv, .git/config or a file, and goes to no other host. Empty for a
 * URL that is not http(s): a token means nothing to ssh or a path.
 */
export function authEnv(auth: GitAuth | null | undefined, base: Record<string, string | undefined> = process.env): Record<string, string> {
  if (!auth?.token) return {};
  let origin: string;
  try {
    const u = new URL(auth.url);
    if (u.protocol !== "https:" && u.protocol !== "http:") return {};
    origin = `${u.protocol}//${u.host}/`;
  } catch {
    return {};
  }
  const n = Math.max(0, parseInt(base.GIT_CONFIG_COUNT ?? "0", 10) || 0);
  return {
    GIT_CONFIG_COUNT: String(n + 1),
    [`GIT_CONFIG_KEY_${n}`]: `http.${origin}.extraHeader`,
    [`GIT_CONFIG_VALUE_${n}`]: `Authorization: Basic ${Buffer.from(`x-access-token:${auth.token}`).toString("base64")}`,
  };
}

/** Removes a token (and its Basic form) from text git printed, in case a server echoes it. */
export function redact(text: string, auth: GitAuth | null | undefined): string {
  if (!auth?.token) return text;
  const basic = Buffer.from(`x-access-token:${auth.token}`).toString("base64");
  return text.replaceAll(auth.token, "[token]").replaceAll(basic, "[token]");
}

export async function git(args: string[], cwd: string, timeoutMs = 10 * 60_000, opts: GitOptions = {}): Promise<GitResult> {
  const proc = Bun.spawn(["git", ...args], {
    cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: timeoutMs,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "echo", LC_ALL: "C", ...opts.env, ...authEnv(opts.auth) },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout: redact(stdout.trim(), opts.auth), stderr: redact(stderr.trim(), opts.auth) };
}

export async function gitOk(args: string[], cwd: string, timeoutMs?: number, opts?: GitOptions): Promise<string> {
  const r = await git(args, cwd, timeoutMs, opts);
  if (r.code !== 0) throw new Error(`git ${args[0]} failed: ${r.stderr || r.stdout || `exit ${r.code}`}`);
  return r.stdout;
}
