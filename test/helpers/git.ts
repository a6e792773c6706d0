// Real git as tests run it against the GitHub stand-in: without blocking (the stand-in answering
// git lives in the same process), never asking for a password, and with an installation token in
// the environment only, as GitHub documents it for apps.

/** Runs `cmd` in `cwd` with a committer identity and `env` added: its exit code and output. */
export async function run(cwd: string, cmd: string[], env: Record<string, string> = {}) {
  const r = Bun.spawn(cmd, {
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_AUTHOR_NAME: "T", GIT_AUTHOR_EMAIL: "t@t.invalid", GIT_COMMITTER_NAME: "T", GIT_COMMITTER_EMAIL: "t@t.invalid", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
  return { code, out: out.trim(), err };
}

/** git with an installation token in the environment only (http.extraHeader), as GitHub documents it for apps. */
export function tokenEnv(token: string): Record<string, string> {
  return {
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "http.extraHeader",
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`,
  };
}
