// Runs one command: its exit code, or the error reported on stderr with the code it means.
import { report } from "./errors";
import { HELP } from "./help";

export async function run(helpKey: string, fn: () => Promise<number | void>): Promise<number> {
  try {
    return (await fn()) ?? 0;
  } catch (err) {
    return report(err, HELP[helpKey] ? `run \`ao help ${helpKey}\` for usage` : undefined);
  }
}

export function printHelp(key: string): number {
  console.log(HELP[key] ?? HELP[key.split(" ")[0]!] ?? "");
  return 0;
}

/** Pretty JSON for scripts. */
export const printJson = (value: unknown) => console.log(JSON.stringify(value, null, 2));
