// Running git: never prompting (a hung credential prompt would hang the attempt), output captured.
export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function git(args: string[], cwd: string, timeoutMs = 10 * 60_000): Promise<GitResult> {
  const proc = Bun.spawn(["git", ...args], {
    cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: timeoutMs,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "echo", LC_ALL: "C" },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout: stdout.trim(), stderr: stderr.trim() };
}

export async function gitOk(args: string[], cwd: string, timeoutMs?: number): Promise<string> {
  const r = await git(args, cwd, timeoutMs);
  if (r.code !== 0) throw new Error(`git ${args[0]} failed: ${r.stderr || r.stdout || `exit ${r.code}`}`);
  return r.stdout;
}
