// What this machine offers, reported at hello: tools with versions, coding agents on PATH, and
// the names (never the values) of model-provider API-key variables that are set.

export interface Found {
  name: string;
  version: string | null;
}

const TOOLS: [string, string[]][] = [
  ["git", ["--version"]],
  ["node", ["--version"]],
  ["bun", ["--version"]],
  ["python3", ["--version"]],
  ["docker", ["--version"]],
  ["go", ["version"]],
  ["cargo", ["--version"]],
  ["make", ["--version"]],
  ["gh", ["--version"]],
];

export const AGENTS = ["claude", "codex", "gemini", "aider", "opencode", "cursor-agent", "amp"];

export const PROVIDER_VARIABLES = [
  "ANTHROPIC_API_KEY",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "OPENAI_API_KEY",
  "CODEX_API_KEY",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "OPENROUTER_API_KEY",
  "MISTRAL_API_KEY",
  "GROQ_API_KEY",
  "DEEPSEEK_API_KEY",
  "XAI_API_KEY",
  "AZURE_OPENAI_API_KEY",
  "AWS_BEARER_TOKEN_BEDROCK",
];

/** The first version-looking token of a --version answer. */
export function versionOf(text: string): string | null {
  const m = /\d+\.\d+(?:\.\d+)?(?:[-+][\w.]+)?/.exec(text);
  return m ? m[0] : text.trim().split("\n")[0]?.slice(0, 100) || null;
}

async function probe(name: string, args: string[], env: Record<string, string | undefined>, timeout = 5000): Promise<Found | null> {
  const path = Bun.which(name, { PATH: env.PATH ?? "" });
  if (!path) return null;
  try {
    const proc = Bun.spawn([path, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore", timeout, env });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    // A tool that fails to say its version (rustup's cargo without a toolchain) is there, its version unknown.
    if ((await proc.exited) !== 0) return { name, version: null };
    return { name, version: versionOf(out || err) };
  } catch {
    return { name, version: null };
  }
}

export async function inventory(env: Record<string, string | undefined> = process.env) {
  const [tools, agents] = await Promise.all([
    Promise.all(TOOLS.map(([n, a]) => probe(n, a, env))),
    // Agents are large programs (Claude Code's is a 250 MB executable) whose first start on a busy machine takes seconds.
    Promise.all(AGENTS.map((n) => probe(n, ["--version"], env, 20_000))),
  ]);
  return {
    tools: tools.filter((t): t is Found => t !== null),
    agents: agents.filter((t): t is Found => t !== null),
    providers: PROVIDER_VARIABLES.filter((v) => (env[v] ?? "") !== ""),
  };
}
