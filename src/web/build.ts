// Bundles the web app (src/web/app/main.tsx: Preact, TSX, signals and the pages' CSS) for the
// browser. Run as its own process by assets.macro.ts: Bun.build cannot run inside a macro while
// the executable itself is being bundled. Prints {files: {name: text}} as JSON on stdout.
import { join } from "node:path";

export async function bundleWebApp(): Promise<Record<string, string>> {
  const result = await Bun.build({
    entrypoints: [join(import.meta.dir, "app", "main.tsx")],
    target: "browser",
    format: "esm",
    minify: true,
    // One file: the pages are small and one request after the HTML is the fastest first paint on a LAN.
    splitting: false,
    naming: { entry: "app.[ext]", asset: "[name].[ext]" },
    define: { "process.env.NODE_ENV": '"production"' },
  });
  if (!result.success) throw new AggregateError(result.logs, `the web app does not build:\n${result.logs.map(String).join("\n")}`);
  const files: Record<string, string> = {};
  for (const out of result.outputs) files[out.path.replace(/^.*\//, "")] = await out.text();
  return files;
}

if (import.meta.main) {
  try {
    process.stdout.write(JSON.stringify({ files: await bundleWebApp() }));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
