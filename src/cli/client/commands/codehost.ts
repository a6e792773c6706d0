// `ao codehost status|sync`: the GitHub app as this organization sees it, and a sync now.
import { flag, parse, str } from "../args";
import { connect } from "../context";
import { EXIT, UsageError } from "../errors";
import { printable, table } from "../format";
import { printHelp, printJson, run } from "../run";
import type { CodehostStatus } from "../types";

type Installations = CodehostStatus["installations"];

function installationRows(list: Installations): string {
  if (list.length === 0) return "no installations (install the app from the web app's GitHub page)";
  return table(
    ["INSTALLATION", "ACCOUNT", "TYPE", "SELECTION", "REPOSITORIES", "SYNCED"],
    list.map((i) => [String(i.id), i.account.login, i.account.type, i.repositorySelection + (i.suspended ? " (suspended)" : ""), String(i.repositories), i.syncedAt ?? "never"]),
  );
}

export function codehost(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === "--help" || sub === "-h" || sub === "help") {
    printHelp("codehost");
    return Promise.resolve(sub ? EXIT.ok : EXIT.usage);
  }
  return run(`codehost ${sub}`, async () => {
    if (sub !== "status" && sub !== "sync") throw new UsageError(`unknown command 'codehost ${sub}'`);
    const p = parse(rest, { org: { type: "string" }, json: { type: "boolean" } });
    if (flag(p, "help")) return printHelp(`codehost ${sub}`);
    const ctx = await connect(str(p, "org"));
    if (sub === "status") {
      const status = await ctx.client.request<CodehostStatus>("GET", `/orgs/${ctx.orgId}/codehost`);
      if (flag(p, "json")) return void printJson(status);
      const app = status.app ? `${status.app.name} (${status.app.htmlUrl})${status.app.ownedByThisOrg ? ", created by this organization" : ""}` : `none yet at ${status.githubUrl}`;
      console.log(printable(`app         ${app}\nconnection  ${status.connection ? status.connection.login : "not connected"}\n`));
      console.log(printable(installationRows(status.installations)));
      return;
    }
    const synced = await ctx.client.request<{ installations: Installations; repositories: number; unclaimed: number }>("POST", `/orgs/${ctx.orgId}/codehost/sync`);
    if (flag(p, "json")) return void printJson(synced);
    console.log(printable(installationRows(synced.installations)));
    console.error(`Synced ${synced.repositories} repositories of ${synced.installations.length} installation(s).${synced.unclaimed ? ` ${synced.unclaimed} installation(s) of the app are connected to no organization here.` : ""}`);
  });
}
