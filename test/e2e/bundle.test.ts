// The bundle every command loads when it starts (scripts/build.ts), the server's included: how
// much of it there is decides the executable's start and idle memory (README, Performance). The
// worker and the agents' SDKs, and octokit, are entry points of their own (src/lazy.ts); of
// @elysiajs/openapi only the generator is in it, and not file-type; nothing at the bundle's top
// level loads Bun's SQL client, which only PostgreSQL needs. The executable's own entry point,
// which `ao serve` runs twice (to set the allocator), holds the allocator module and nothing else.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ENTRYPOINTS, EXTERNAL } from "../../scripts/build";

const out = mkdtempSync(join(tmpdir(), "ao-bundle-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

test("the worker, the agents' SDKs, octokit, file-type and the OpenAPI plugin's pages are outside the bundle every command loads, Bun's SQL client loads only when used, and the executable's entry is the allocator alone", async () => {
  const result = await Bun.build({ entrypoints: ENTRYPOINTS, external: EXTERNAL, target: "bun", format: "esm", outdir: out });
  expect(result.success).toBe(true);
  const main = readFileSync(join(out, "main.js"), "utf8");
  const worker = readFileSync(join(out, "worker", "index.js"), "utf8");
  const launch = readFileSync(join(out, "launch.js"), "utf8");
  const github = readFileSync(join(out, "modules", "codehost", "octokit.js"), "utf8");

  const found = (text: string, marks: RegExp[]) => marks.filter((m) => m.test(text)).map(String);
  expect(found(worker, [/\/\/ node_modules\/@anthropic-ai\/claude-agent-sdk\//, /\/\/ src\/worker\/runtime\.ts/])).toHaveLength(2);
  expect(found(github, [/\/\/ node_modules\/@octokit\/rest\//, /\/\/ node_modules\/@octokit\/auth-app\//, /\/\/ node_modules\/@octokit\/oauth-app\//])).toHaveLength(3);
  expect(main.includes("// src/db/pg-store.ts")).toBe(true);
  expect(main.includes("// node_modules/@elysiajs/openapi/dist/openapi.mjs")).toBe(true);
  // The last mark is what `import { SQL } from "bun"` becomes: a top-level line that loads the client.
  expect(found(main, [/\/\/ node_modules\/@anthropic-ai\/claude-agent-sdk\//, /\/\/ src\/worker\//, /\/\/ node_modules\/@octokit\//, /\/\/ node_modules\/file-type\//, /\/\/ node_modules\/@elysiajs\/openapi\/dist\/index\.mjs/, /\{\s*SQL\b[^}]*\}\s*=\s*globalThis\.Bun/])).toEqual([]);
  // The sources in the entry's bundle: its own and the allocator's (a few kB, against main.js's MBs).
  expect([...launch.matchAll(/^\/\/ (src\/\S+|node_modules\/\S+)$/gm)].map((m) => m[1]).sort()).toEqual(["src/launch.ts", "src/server/allocator.ts"]);
  expect(launch.length).toBeLessThan(10_000);
}, 60_000);
