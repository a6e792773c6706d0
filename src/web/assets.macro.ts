// A Bun macro: runs at build (and transpile) time, so the compiled executable carries the web
// app (one HTML shell, the bundled script and stylesheet, the icon) and serves it from any
// directory, offline. `bun src/main.ts serve` and the tests run it too: the app is bundled
// when the server's code is loaded, so source and executable always serve the same thing.
import { readdirSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";

export interface EmbeddedFile {
  body: string;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

const file = (body: string, ext: string): EmbeddedFile => ({
  body,
  type: TYPES[ext]!,
  etag: `"${new Bun.CryptoHasher("sha256").update(body).digest("hex").slice(0, 20)}"`,
});

/** The app's HTML shell ("app") and the 404 page ("not-found"), and the assets by file name. */
export function webAssets(): { pages: Record<string, EmbeddedFile>; assets: Record<string, EmbeddedFile> } {
  // Bun.build cannot run inside a macro while Bun is bundling (it would wait for itself): a child does it.
  const child = Bun.spawnSync([process.execPath, join(import.meta.dir, "build.ts")], { cwd: join(import.meta.dir, "..", ".."), stdout: "pipe", stderr: "pipe" });
  if (child.exitCode !== 0) throw new Error(`bundling the web app failed:\n${child.stderr.toString()}`);
  const { files } = JSON.parse(child.stdout.toString()) as { files: Record<string, string> };
  const assets: Record<string, EmbeddedFile> = {};
  for (const [name, body] of Object.entries(files)) if (TYPES[extname(name)]) assets[name] = file(body, extname(name));
  const publicDir = join(import.meta.dir, "public");
  for (const name of readdirSync(publicDir).sort()) if (TYPES[extname(name)]) assets[name] = file(readFileSync(join(publicDir, name), "utf8"), extname(name));
  const html = (name: string) => file(readFileSync(join(import.meta.dir, `${name}.html`), "utf8"), ".html");
  return { pages: { app: html("app"), "not-found": html("not-found") }, assets };
}
