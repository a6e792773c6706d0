// A Bun macro: runs at build (and transpile) time, so the compiled executable carries the web
// app's pages and assets and serves them from any directory, offline. A page may pull in a
// shared piece of markup with `<!-- include NAME -->` (from pages/NAME.part.html).
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

/** Pages by name (index, setup, device, pair) and assets by file name (app.js, app.css, ...). */
export function webAssets(): { pages: Record<string, EmbeddedFile>; assets: Record<string, EmbeddedFile> } {
  const pagesDir = join(import.meta.dir, "pages");
  const staticDir = join(import.meta.dir, "static");
  const pages: Record<string, EmbeddedFile> = {};
  for (const name of readdirSync(pagesDir).sort()) {
    if (!name.endsWith(".html") || name.endsWith(".part.html")) continue;
    const html = readFileSync(join(pagesDir, name), "utf8").replace(/<!-- include ([a-z-]+) -->/g, (_, part: string) =>
      readFileSync(join(pagesDir, `${part}.part.html`), "utf8").trim(),
    );
    pages[name.slice(0, -".html".length)] = file(html, ".html");
  }
  const assets: Record<string, EmbeddedFile> = {};
  for (const name of readdirSync(staticDir).sort()) {
    const ext = extname(name);
    if (TYPES[ext] && ext !== ".html") assets[name] = file(readFileSync(join(staticDir, name), "utf8"), ext);
  }
  return { pages, assets };
}
