// Builds the single executable `dist/ao` (SPEC §2): `npm run build` / `bun run build`.
// `bun scripts/build.ts [outfile]` writes elsewhere (the end-to-end tests build their own copy).
// The executable carries Bun, our code as bytecode and the migrations (embedded by the
// macro in src/db/migrations.macro.ts), so it runs from any directory with nothing beside it.
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { LAZY_ENTRIES } from "../src/lazy";

const root = join(import.meta.dir, "..");

/**
 * The executable's entry (the launcher: `ao serve` starts itself again from it, before the program
 * loads), the program (src/launch.ts imports it by MAIN_ENTRY), and the parts the program loads on
 * first use (src/lazy.ts: the worker and the agents' SDKs, octokit), each an entry point of its own,
 * so the bundle every command loads at start, the server's included, is without them. The first is
 * the one the executable runs.
 */
export const ENTRYPOINTS = [join(root, "src", "launch.ts"), join(root, "src", "main.ts"), ...LAZY_ENTRIES.map((entry) => join(root, "src", entry))];

/**
 * Left out of the executable: Elysia imports file-type, when first used, to check the type of
 * uploaded files (`t.File`), which no route of ao declares (120 kB of the bundle every command loads).
 */
export const EXTERNAL = ["file-type"];

export async function buildExecutable(outfile = join(root, "dist", "ao")): Promise<string> {
  outfile = resolve(outfile);
  mkdirSync(dirname(outfile), { recursive: true });
  rmSync(outfile, { force: true });
  const result = await Bun.build({
    entrypoints: ENTRYPOINTS,
    target: "bun",
    format: "esm",
    external: EXTERNAL,
    bytecode: true,
    // No minify: Elysia compiles its handlers from function source and breaks on renamed identifiers.
    minify: false,
    // Compile mode embeds the map (zstd) in the executable, so stack traces name src/ lines.
    sourcemap: "linked",
    compile: {
      outfile,
      // A server started in some directory must not pick up that directory's bunfig.toml or
      // .env (a repository's test settings, someone else's secrets): configuration is flags + env.
      autoloadDotenv: false,
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
    },
  });
  if (!result.success) {
    throw new AggregateError(result.logs, `build failed:\n${result.logs.map(String).join("\n")}`);
  }
  for (const log of result.logs) console.warn(String(log));
  // The map is already inside the executable; the copy Bun also writes beside it is not needed.
  rmSync(`${outfile}.map`, { force: true });
  return outfile;
}

if (import.meta.main) {
  const started = performance.now();
  try {
    const outfile = await buildExecutable(process.argv[2]);
    const mib = (Bun.file(outfile).size / 1024 / 1024).toFixed(1);
    console.log(`built ${outfile} (${mib} MiB) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
