// What the stand-in knows: accounts, apps, installations, repositories and the tokens it has
// issued, with the rules GitHub applies to them (which repositories an installation covers,
// what a token may read or write). The web side, the API and the tests all work on one World.
import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Account, AppRecord, CommentRecord, InstallationRecord, PullRecord, RepositoryRecord, ReviewRecord } from "./shapes";
import { createBareRepository } from "./git-http";

export type Json = any;
export type Permissions = Record<string, string>;

export interface StandInApp {
  record: AppRecord;
  clientId: string;
  clientSecret: string;
  webhookSecret: string;
  pem: string;
  publicKey: KeyObject;
  hookUrl: string | null;
  redirectUrl: string | null;
  callbackUrls: string[];
  setupUrl: string | null;
  /** states of `/apps/:slug/installations/new` visits, handed back on the setup redirect */
  installStates: string[];
  /** the manifest as posted, for tests that check what ao asked for */
  manifest: Json;
}

export interface StandInInstallation {
  record: InstallationRecord;
  /** ids of the selected repositories; null when the installation has all of the account's */
  repositoryIds: Set<number> | null;
}

export interface StandInRepository {
  record: RepositoryRecord;
  /** the bare repository on disk (a test may `git log` it) */
  dir: string;
  pulls: PullRecord[];
  reviews: ReviewRecord[];
  comments: CommentRecord[];
  nextNumber: number;
}

export type Token =
  | { kind: "installation"; installationId: number; repositoryIds: Set<number> | null; permissions: Permissions; expiresAt: number }
  | { kind: "user"; login: string; appId: number; expiresAt: number };

/** What a request's Authorization header holds: a live token, an app's JWT, or neither. */
export interface Credentials {
  token: Token | null;
  jwt: string | null;
  /** whether there was an Authorization header at all */
  given: boolean;
}

export interface Delivery {
  url: string;
  event: string;
  id: string;
  status: number;
  body: string;
}

export function now() {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function randomToken(prefix: string) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = randomBytes(36);
  return prefix + Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

function slugify(name: string) {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

export class World {
  readonly gitRoot = mkdtempSync(join(tmpdir(), "gh-standin-"));
  private nextId = 1000;
  readonly accounts = new Map<string, Account>();
  readonly apps = new Map<number, StandInApp>();
  readonly installations = new Map<number, StandInInstallation>();
  readonly repos = new Map<string, StandInRepository>();
  readonly tokens = new Map<string, Token>();
  readonly manifestCodes = new Map<string, number>();
  readonly oauthCodes = new Map<string, { appId: number; login: string; redirectUri: string | null; expiresAt: number }>();
  readonly refreshTokens = new Map<string, { appId: number; login: string }>();
  /** every API request as answered, in order */
  readonly requests: { method: string; path: string; status: number }[] = [];
  readonly deliveries: Delivery[] = [];
  readonly faults = { fail: 0, failStatus: 502, limit: 0, limitStatus: 403 as 403 | 429, resetIn: 60, retryAfter: 60 };
  /** API requests so far, for the rate-limit headers */
  used = 0;
  signedIn: Account;
  readonly apiUrl: string;
  readonly hosts: { web: string; api: string };

  constructor(readonly url: string) {
    this.apiUrl = `${url}/api/v3`;
    this.hosts = { web: url, api: this.apiUrl };
    this.signedIn = this.account("octocat", { name: "The Octocat", email: "octocat@github.invalid" });
  }

  id() {
    return ++this.nextId;
  }

  account(login: string, opts: { type?: "User" | "Organization"; name?: string; email?: string; members?: string[] } = {}): Account {
    const existing = this.accounts.get(login.toLowerCase());
    if (existing) {
      if (opts.members) existing.members = [...new Set([...(existing.members ?? []), ...opts.members])];
      return existing;
    }
    const a: Account = { login, id: this.id(), type: opts.type ?? "User", name: opts.name ?? null, email: opts.email ?? null, members: opts.members };
    this.accounts.set(login.toLowerCase(), a);
    return a;
  }

  repoKey(owner: string, name: string) {
    return `${owner}/${name}`.toLowerCase();
  }

  createRepository(
    owner: string,
    name: string,
    opts: { private?: boolean; files?: Record<string, string>; branch?: string; description?: string; type?: "User" | "Organization" } = {},
  ): StandInRepository {
    const ownerAccount = this.account(owner, { type: opts.type });
    const key = this.repoKey(owner, name);
    if (this.repos.has(key)) throw new Error(`${owner}/${name} exists`);
    const branch = opts.branch ?? "main";
    const dir = createBareRepository(this.gitRoot, ownerAccount.login, name, branch, opts.files);
    const t = now();
    const r: StandInRepository = {
      record: { id: this.id(), owner: ownerAccount, name, private: opts.private ?? true, description: opts.description ?? null, defaultBranch: branch, createdAt: t, pushedAt: t },
      dir,
      pulls: [],
      reviews: [],
      comments: [],
      nextNumber: 1,
    };
    this.repos.set(key, r);
    return r;
  }

  app(slugOrId: string | number): StandInApp {
    for (const a of this.apps.values()) if (a.record.id === slugOrId || a.record.slug === slugOrId || String(a.record.id) === String(slugOrId)) return a;
    throw new Error(`no app ${slugOrId}`);
  }

  installationRepos(inst: StandInInstallation): StandInRepository[] {
    return [...this.repos.values()]
      .filter((r) => r.record.owner.login === inst.record.account.login && (inst.repositoryIds === null || inst.repositoryIds.has(r.record.id)))
      .sort((a, b) => a.record.id - b.record.id);
  }

  mintToken(installationId: number, opts: { repositories?: string[]; permissions?: Permissions; ttlMs?: number } = {}): string {
    const inst = this.installations.get(installationId);
    if (!inst) throw new Error(`no installation ${installationId}`);
    const ids = opts.repositories
      ? new Set(opts.repositories.map((n) => this.installationRepos(inst).find((r) => r.record.name === n)?.record.id ?? -1))
      : null;
    const token = randomToken("ghs_");
    this.tokens.set(token, {
      kind: "installation",
      installationId,
      repositoryIds: ids,
      permissions: opts.permissions ?? inst.record.permissions,
      expiresAt: Date.now() + (opts.ttlMs ?? 3600_000),
    });
    return token;
  }

  tokenFrom(req: Request): Credentials {
    const h = req.headers.get("authorization");
    if (!h) return { token: null, jwt: null, given: false };
    const m = h.match(/^(?:token|bearer)\s+(\S+)$/i);
    if (!m) return { token: null, jwt: null, given: true };
    const value = m[1]!;
    if (value.startsWith("eyJ") && value.split(".").length === 3) return { token: null, jwt: value, given: true };
    const t = this.tokens.get(value);
    if (!t || t.expiresAt <= Date.now()) return { token: null, jwt: null, given: true };
    return { token: t, jwt: null, given: true };
  }

  /** Registers an app from a manifest as GitHub's "Create GitHub App" button does; a string says why not. */
  createApp(manifest: Json, orgLogin: string | null): StandInApp | string {
    const name = typeof manifest.name === "string" && manifest.name ? manifest.name : `${this.signedIn.login}-app`;
    const slug = slugify(name);
    if ([...this.apps.values()].some((a) => a.record.slug === slug)) return "Name is already in use";
    const owner = orgLogin ? this.account(orgLogin, { type: "Organization", members: [this.signedIn.login] }) : this.signedIn;
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    const a: StandInApp = {
      record: {
        id: this.id(),
        slug,
        name,
        owner,
        description: manifest.description ?? null,
        url: manifest.url,
        permissions: { metadata: "read", ...(manifest.default_permissions ?? {}) },
        events: manifest.default_events ?? [],
        createdAt: now(),
      },
      clientId: "Iv1." + randomBytes(8).toString("hex"),
      clientSecret: randomBytes(20).toString("hex"),
      webhookSecret: randomBytes(20).toString("hex"),
      pem,
      publicKey,
      hookUrl: manifest.hook_attributes?.url && manifest.hook_attributes?.active !== false ? manifest.hook_attributes.url : null,
      redirectUrl: manifest.redirect_url ?? null,
      callbackUrls: manifest.callback_urls ?? (manifest.callback_url ? [manifest.callback_url] : []),
      setupUrl: manifest.setup_url ?? null,
      installStates: [],
      manifest,
    };
    this.apps.set(a.record.id, a);
    return a;
  }

  /** The bot user an installation acts as (`<slug>[bot]`). */
  botAccount(inst: StandInInstallation): Account {
    return this.account(`${inst.record.app.slug}[bot]`, { type: "User" });
  }

  repoAccess(t: Token | null, r: StandInRepository): "none" | "read" | "write" {
    if (!t) return r.record.private ? "none" : "read";
    if (t.kind === "installation") {
      const inst = this.installations.get(t.installationId);
      if (!inst || !this.installationRepos(inst).includes(r) || (t.repositoryIds && !t.repositoryIds.has(r.record.id))) return r.record.private ? "none" : "read";
      return t.permissions.contents === "write" ? "write" : "read";
    }
    const owner = r.record.owner;
    const member = owner.login === t.login || (owner.members ?? []).includes(t.login);
    return member ? "write" : r.record.private ? "none" : "read";
  }

  installationFor(t: Token | null) {
    return t?.kind === "installation" ? this.installations.get(t.installationId) ?? null : null;
  }

  coveredBy(t: Token, r: StandInRepository) {
    return t.kind !== "installation" || !t.repositoryIds || t.repositoryIds.has(r.record.id);
  }
}
