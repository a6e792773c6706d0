// `ao token create`: a personal API token for scripts and CI, shown once.
import { flag, oneOf, parse, required, str } from "../args";
import { connect } from "../context";
import { EXIT, UsageError } from "../errors";
import { printHelp, printJson, run } from "../run";
import { ROLES } from "../types";

interface CreatedToken {
  id: string;
  name: string;
  token: string;
  role?: string;
  orgId?: string;
  expiresAt?: string | null;
}

export function token(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === "--help" || sub === "-h" || sub === "help") {
    printHelp("token");
    return Promise.resolve(sub ? EXIT.ok : EXIT.usage);
  }
  return run("token create", async () => {
    if (sub !== "create") throw new UsageError(`unknown command 'token ${sub}'`);
    const p = parse(rest, { org: { type: "string" }, name: { type: "string" }, role: { type: "string" }, "expires-at": { type: "string" }, json: { type: "boolean" } });
    if (flag(p, "help")) return printHelp("token create");
    const name = required(p, "name");
    const role = oneOf("role", str(p, "role"), ROLES, (v) => v.toLowerCase());
    const expires = str(p, "expires-at");
    let expiresAt: string | undefined;
    if (expires !== undefined) {
      const ms = Date.parse(expires);
      if (Number.isNaN(ms)) throw new UsageError(`--expires-at must be an ISO 8601 time, e.g. 2030-01-31T00:00:00Z (got '${expires}')`);
      expiresAt = new Date(ms).toISOString();
    }
    const ctx = await connect(str(p, "org"));
    const created = await ctx.client.request<CreatedToken>("POST", "/me/tokens", {
      body: { name, orgId: ctx.orgId, ...(role ? { role } : {}), ...(expiresAt ? { expiresAt } : {}) },
    });
    if (flag(p, "json")) return void printJson(created);
    console.log(created.token);
    console.error(
      `Created token ${created.id} "${created.name}"${created.role ? ` with role ${created.role}` : ""}, ${created.expiresAt ? `expires ${created.expiresAt}` : "no expiry"}.\n` +
        "Copy it now: it is not shown again. Use it as AO_TOKEN (with AO_SERVER).",
    );
  });
}
