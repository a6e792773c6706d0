// Server configuration from flags and environment variables (SPEC §2).
import { join, resolve } from "node:path";
import type { Config } from "./core";
import { logSettingsFromEnv } from "./log";
import { isAddressOrRange } from "../lib/addresses";

export function defaultConfig(overrides: Partial<Config> = {}): Config {
  const env = process.env;
  const port = overrides.port ?? numberEnv("AO_PORT", 7070);
  const host = overrides.host ?? env.AO_HOST ?? "0.0.0.0";
  const dataDir = resolve(overrides.dataDir ?? env.AO_DATA_DIR ?? "./ao-data");
  return {
    port,
    host,
    dataDir,
    databaseUrl: databaseUrl(overrides.databaseUrl !== undefined ? overrides.databaseUrl : env.AO_DATABASE_URL || null),
    // Servers sharing one PostgreSQL database must share this file too: each reads its secrets with it.
    masterKeyFile: resolve(overrides.masterKeyFile ?? (env.AO_MASTER_KEY_FILE || join(dataDir, "master.key"))),
    publicUrl: (overrides.publicUrl ?? env.AO_PUBLIC_URL ?? "").replace(/\/+$/, ""),
    passwordCost: overrides.passwordCost ?? { memoryCost: 19456, timeCost: 2 },
    jsonLimitBytes: overrides.jsonLimitBytes ?? 1024 * 1024,
    artifactLimitBytes: overrides.artifactLimitBytes ?? 50 * 1024 * 1024,
    allowPrivateCallbacks: overrides.allowPrivateCallbacks ?? env.AO_ALLOW_PRIVATE_CALLBACKS === "1",
    workerTimeouts: overrides.workerTimeouts ?? { offerMs: 10_000, offlineMs: 30_000, heartbeatMs: 10_000 },
    liveTimeouts: overrides.liveTimeouts ?? { authMs: 10_000, recheckMs: 30_000 },
    // 15 minutes (SPEC §4); a web page or the CLI renews it through the refresh token.
    accessTokenTtlSec: overrides.accessTokenTtlSec ?? 900,
    // Well below the usual 20,000 open files a process gets; behind a reverse proxy every client
    // shares the proxy's address (README "Limits").
    connections: overrides.connections ?? { perAddress: countEnv("AO_MAX_CONNECTIONS_PER_ADDRESS", 256), idleSec: 10, requestSec: 60 },
    trustedProxies: overrides.trustedProxies ?? trustedProxiesFromEnv(),
    log: overrides.log ?? logSettingsFromEnv(env),
    metricsToken: overrides.metricsToken !== undefined ? overrides.metricsToken : env.AO_METRICS_TOKEN || null,
    github: overrides.github ?? githubFromEnv(),
    // 8 tries over about a day: 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 15 h after the first (jittered).
    callbacks: overrides.callbacks ?? { retryDelaysMs: [10_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 54_000_000], timeoutMs: 10_000 },
  };
}

function databaseUrl(url: string | null): string | null {
  if (url !== null && !/^postgres(ql)?:\/\/./i.test(url)) throw new Error(`AO_DATABASE_URL (--database-url) must be a postgres:// or postgresql:// URL, got ${url.replace(/\/\/[^@/]*@/, "//***@")}`);
  return url;
}

function trustedProxiesFromEnv(): string[] {
  const v = process.env.AO_TRUSTED_PROXIES ?? "";
  const ranges = v.split(",").map((r) => r.trim()).filter(Boolean);
  if (!ranges.every(isAddressOrRange)) throw new Error(`AO_TRUSTED_PROXIES must be addresses or CIDR ranges separated by commas, got ${v}`);
  return ranges;
}

function githubFromEnv(): Config["github"] {
  const env = process.env;
  const url = (env.AO_GITHUB_URL || "https://github.com").replace(/\/+$/, "");
  // GitHub Enterprise Server answers its API under /api/v3 of its own host.
  const apiDefault = url === "https://github.com" ? "https://api.github.com" : `${url}/api/v3`;
  const apiUrl = (env.AO_GITHUB_API_URL || apiDefault).replace(/\/+$/, "");
  for (const [name, value] of [["AO_GITHUB_URL", url], ["AO_GITHUB_API_URL", apiUrl]]) {
    if (!/^https?:\/\/[^\s/]+/.test(value)) throw new Error(`${name} must be an http(s) URL, got ${value}`);
  }
  return { url, apiUrl, retryBaseMs: 2_000, maxTries: 10 };
}

function numberEnv(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number, got ${v}`);
  return n;
}

function countEnv(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number (0 for no limit), got ${v}`);
  return n;
}

/** The public URL: configured, or derived from host and the port actually bound. */
export function publicUrlFor(config: Config, boundPort: number): string {
  if (config.publicUrl) return config.publicUrl;
  const host = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${boundPort}`;
}
