// Parts of the program loaded on first use. Each is an entry point of its own in the executable
// (scripts/build.ts): imported by a specifier the bundler does not follow, its code stays out of
// the bundle every command loads at start, whose size sets the start's time and the server's idle
// memory (README, Performance). The specifiers are relative to this file, which sits beside
// src/main.ts: in the executable they resolve against the program's bundle, main.js, in the same place.

const WORKER: string = "./worker/index.ts";
const GITHUB: string = "./modules/codehost/octokit.ts";

/** The entry points, relative to src/. */
export const LAZY_ENTRIES = [WORKER, GITHUB];

/** The worker and the agents' SDKs (1.5 MB): `ao worker` alone loads them. */
export const loadWorker = () => import(WORKER) as Promise<typeof import("./worker")>;

/** Octokit: the server loads it when it first talks to GitHub. */
export const loadGithub = () => import(GITHUB) as Promise<typeof import("./modules/codehost/octokit")>;
