// A real small file system for full-disk tests: a tmpfs mounted for the test (root only), and a
// filler file that takes every free byte of it.
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface SmallDisk {
  dir: string;
  /** Fills the file system to the last block; returns the filler's path (delete it to free the space). */
  fill(): string;
  free(): number;
  unmount(): void;
}

/** Mounts a tmpfs of `bytes`, or returns why it cannot (not root, no mount in this sandbox). */
export function mountSmallDisk(bytes: number): SmallDisk | string {
  const dir = mkdtempSync(join(tmpdir(), "ao-disk-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir], { encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here (${(r.stderr || r.error?.message || "mount failed").trim()}); full-disk tests need root and mount`;
  }
  let n = 0;
  return {
    dir,
    fill() {
      const path = join(dir, `filler-${n++}`);
      const fd = openSync(path, "w");
      try {
        for (const size of [1 << 20, 4096, 512, 1]) {
          const chunk = new Uint8Array(size);
          for (;;) {
            try {
              writeSync(fd, chunk);
            } catch (err) {
              if ((err as { code?: string }).code === "ENOSPC") break;
              throw err;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
      return path;
    },
    free: () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
    unmount() {
      spawnSync("umount", ["-l", dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
