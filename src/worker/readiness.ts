// AI readiness of a repository: deterministic checks of what a coding agent needs to work in it
// on its own (instructions, a test command that runs, reproducible setup, CI, style tools, a
// manageable size), a weighted score out of 100 and a readable report.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ReadinessCheck } from "../protocol/requests";
import { spawnGroup } from "./process";
import { git } from "./git";

export interface ReadinessResult {
  score: number;
  checks: ReadinessCheck[];
  report: string;
}

interface CheckDef {
  id: string;
  title: string;
  weight: number;
  advice: string;
  run(dir: string): Promise<{ passed: boolean; detail: string }> | { passed: boolean; detail: string };
}

const has = (dir: string, ...paths: string[]) => paths.filter((p) => existsSync(join(dir, p)));
const read = (dir: string, path: string) => {
  try {
    return readFileSync(join(dir, path), "utf8");
  } catch {
    return "";
  }
};
const listDir = (dir: string, path: string) => {
  try {
    return readdirSync(join(dir, path));
  } catch {
    return [] as string[];
  }
};

/** The command that runs the tests, as a shell line, or null when none is declared. */
export function detectTestCommand(dir: string): string | null {
  const pkg = read(dir, "package.json");
  if (pkg) {
    try {
      const test = (JSON.parse(pkg) as { scripts?: Record<string, string> }).scripts?.test;
      if (test && !/no test specified/.test(test)) {
        if (has(dir, "bun.lock", "bun.lockb").length) return "bun run test";
        if (has(dir, "pnpm-lock.yaml").length) return "pnpm test";
        if (has(dir, "yarn.lock").length) return "yarn test";
        return "npm test --silent";
      }
    } catch {}
  }
  if (/^test\s*:/m.test(read(dir, "Makefile"))) return "make test";
  if (has(dir, "Cargo.toml").length) return "cargo test";
  if (has(dir, "go.mod").length) return "go test ./...";
  if (has(dir, "pytest.ini", "conftest.py").length || /\[tool\.pytest/.test(read(dir, "pyproject.toml"))) return "python3 -m pytest -q";
  for (const script of ["test.sh", "scripts/test.sh", "script/test"]) if (has(dir, script).length) return `sh ${script}`;
  return null;
}

async function runTests(dir: string, command: string, timeoutMs: number): Promise<{ passed: boolean; detail: string }> {
  const tail: string[] = [];
  const keep = (line: string) => {
    tail.push(line);
    if (tail.length > 15) tail.shift();
  };
  const started = Date.now();
  const proc = spawnGroup("/bin/sh", ["-c", command], { cwd: dir, env: { ...(process.env as Record<string, string>), CI: "1" }, onStdout: keep, onStderr: keep });
  const timer = setTimeout(() => void proc.terminate(2000), timeoutMs);
  const exit = await proc.exited;
  clearTimeout(timer);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const timedOut = Date.now() - started >= timeoutMs;
  const passed = exit.code === 0 && !timedOut;
  const how = timedOut ? `did not finish within ${timeoutMs / 1000} s` : passed ? `passed in ${seconds} s` : `exited with ${exit.code ?? exit.signal} after ${seconds} s`;
  return { passed, detail: `\`${command}\` ${how}${passed ? "" : `; last output:\n${tail.join("\n")}`}`.slice(0, 4000) };
}

function checks(testTimeoutMs: number): CheckDef[] {
  return [
    {
      id: "test_command",
      title: "A test command that runs",
      weight: 25,
      advice: "Declare how to run the tests (a package.json test script, a Makefile test target, ...) and keep them passing: agents check their work with it.",
      run: (dir) => {
        const command = detectTestCommand(dir);
        return command ? runTests(dir, command, testTimeoutMs) : { passed: false, detail: "no test command found" };
      },
    },
    {
      id: "agent_instructions",
      title: "Instructions for agents",
      weight: 15,
      advice: "Add AGENTS.md (or CLAUDE.md) with how to build, test and the conventions of the codebase.",
      run: (dir) => {
        const found = has(dir, "AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".cursorrules", ".cursor/rules", "GEMINI.md");
        return { passed: found.length > 0, detail: found.length ? `found ${found.join(", ")}` : "no AGENTS.md, CLAUDE.md or similar" };
      },
    },
    {
      id: "readme",
      title: "README",
      weight: 10,
      advice: "Write a README that says what the project is and how to work on it.",
      run: (dir) => {
        const found = listDir(dir, ".").find((f) => /^readme(\.(md|rst|txt|adoc))?$/i.test(f));
        if (!found) return { passed: false, detail: "no README" };
        const size = statSync(join(dir, found)).size;
        return { passed: size >= 100, detail: `${found} (${size} bytes)${size < 100 ? ": too short to help" : ""}` };
      },
    },
    {
      id: "ci",
      title: "Continuous integration",
      weight: 10,
      advice: "Run the tests in CI (.github/workflows, .gitlab-ci.yml, ...) so every change is checked the same way.",
      run: (dir) => {
        const workflows = listDir(dir, ".github/workflows").filter((f) => /\.ya?ml$/.test(f)).map((f) => `.github/workflows/${f}`);
        const found = [...workflows, ...has(dir, ".gitlab-ci.yml", ".circleci/config.yml", "azure-pipelines.yml", "Jenkinsfile", ".buildkite", ".woodpecker.yml", "bitbucket-pipelines.yml")];
        return { passed: found.length > 0, detail: found.length ? `found ${found.join(", ")}` : "no CI configuration" };
      },
    },
    {
      id: "lockfile",
      title: "Locked dependencies",
      weight: 10,
      advice: "Commit a lockfile so an agent installs exactly what you test with.",
      run: (dir) => {
        const found = has(dir, "package-lock.json", "bun.lock", "bun.lockb", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "uv.lock", "Pipfile.lock", "Cargo.lock", "go.sum", "Gemfile.lock", "composer.lock");
        const manifests = has(dir, "package.json", "pyproject.toml", "Cargo.toml", "go.mod", "Gemfile", "composer.json", "requirements.txt");
        if (found.length) return { passed: true, detail: `found ${found.join(", ")}` };
        return manifests.length ? { passed: false, detail: `${manifests.join(", ")} without a lockfile` } : { passed: true, detail: "no dependency manifest: nothing to lock" };
      },
    },
    {
      id: "setup",
      title: "One-step setup",
      weight: 10,
      advice: "Provide a setup script (scripts/setup.sh, a Makefile setup target or a devcontainer) that installs what the project needs.",
      run: (dir) => {
        const scripts = [...listDir(dir, "scripts"), ...listDir(dir, "script")].filter((f) => /^(setup|bootstrap|install)/.test(f));
        const makefile = /^(setup|bootstrap|install)\s*:/m.test(read(dir, "Makefile")) ? ["Makefile target"] : [];
        const found = [...has(dir, "setup.sh", "bootstrap.sh", ".devcontainer/devcontainer.json", ".devcontainer.json", "flake.nix", "justfile"), ...scripts, ...makefile];
        return { passed: found.length > 0, detail: found.length ? `found ${found.join(", ")}` : "no setup script, Makefile setup target or devcontainer" };
      },
    },
    {
      id: "style",
      title: "Formatter and linter",
      weight: 10,
      advice: "Configure a formatter and a linter so agents match the codebase's style mechanically.",
      run: (dir) => {
        const files = listDir(dir, ".").filter((f) => /^(\.prettierrc.*|prettier\.config\..*|biome\.jsonc?|\.eslintrc.*|eslint\.config\..*|\.editorconfig|ruff\.toml|\.ruff\.toml|\.flake8|rustfmt\.toml|\.rustfmt\.toml|\.golangci\.ya?ml|\.rubocop\.yml|deno\.jsonc?|\.clang-format|\.pre-commit-config\.yaml)$/.test(f));
        const pyproject = /\[tool\.(ruff|black|isort|pylint)/.test(read(dir, "pyproject.toml")) ? ["pyproject.toml tool settings"] : [];
        const pkg = /"(prettier|eslintConfig)"\s*:/.test(read(dir, "package.json")) ? ["package.json settings"] : [];
        const found = [...files, ...pyproject, ...pkg];
        return { passed: found.length > 0, detail: found.length ? `found ${found.join(", ")}` : "no formatter or linter configuration" };
      },
    },
    {
      id: "size",
      title: "Manageable size",
      weight: 5,
      advice: "Keep generated files and large binaries out of the repository (or in Git LFS).",
      run: async (dir) => {
        const ls = await git(["ls-files", "-z"], dir, 60_000);
        if (ls.code !== 0) return { passed: false, detail: "not a git checkout" };
        const files = ls.stdout.split("\0").filter(Boolean);
        let bytes = 0;
        for (const f of files) {
          try {
            bytes += statSync(join(dir, f)).size;
          } catch {}
        }
        const mb = bytes / 1024 / 1024;
        return { passed: files.length <= 50_000 && mb <= 500, detail: `${files.length} tracked files, ${mb.toFixed(1)} MiB` };
      },
    },
    {
      id: "gitignore",
      title: "Ignored build output",
      weight: 5,
      advice: "Add a .gitignore so build output and dependencies never end up in commits.",
      run: (dir) => ({ passed: has(dir, ".gitignore").length > 0, detail: has(dir, ".gitignore").length ? "found .gitignore" : "no .gitignore" }),
    },
  ];
}

export async function assessReadiness(dir: string, opts: { testTimeoutMs?: number } = {}): Promise<ReadinessResult> {
  const defs = checks(opts.testTimeoutMs ?? 300_000);
  const results: ReadinessCheck[] = [];
  let score = 0;
  for (const def of defs) {
    let r: { passed: boolean; detail: string };
    try {
      r = await def.run(dir);
    } catch (err) {
      r = { passed: false, detail: `the check failed: ${(err as Error).message}` };
    }
    if (r.passed) score += def.weight;
    results.push({ id: def.id, passed: r.passed, detail: r.detail });
  }
  const lines = [`# AI readiness: ${score}/100`, "", "| check | result | detail |", "|---|---|---|"];
  defs.forEach((d, i) => lines.push(`| ${d.title} (${d.weight}) | ${results[i].passed ? "passed" : "missing"} | ${results[i].detail.split("\n")[0].replace(/\|/g, "\\|")} |`));
  const todo = defs.filter((_, i) => !results[i].passed);
  if (todo.length) lines.push("", "## What would help", "", ...todo.map((d) => `- **${d.title}**: ${d.advice}`));
  return { score, checks: results, report: lines.join("\n") };
}
