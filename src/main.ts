#!/usr/bin/env bun
// The ao executable: server, worker and command-line client in one.
import { VERSION } from "./version";
import { loadWorker } from "./lazy";

type Command = (args: string[]) => Promise<number | void>;

const COMMANDS: Record<string, { summary: string; run: () => Promise<Command> }> = {
  serve: { summary: "run the server", run: async () => (await import("./cli/serve")).serve },
  healthcheck: { summary: "exit 0 when the local server answers /api/v1/health", run: async () => (await import("./cli/serve")).healthcheck },
  admin: { summary: "instance administration: admin create-user --email --password [--org --role] [--admin] [--database-url]", run: async () => (await import("./cli/admin")).admin },
  backup: { summary: "backup --output FILE [--data-dir DIR]: a consistent copy of a data directory, while the server runs", run: async () => (await import("./cli/backup")).backup },
  restore: { summary: "restore FILE --data-dir NEWDIR: a backup into an empty data directory", run: async () => (await import("./cli/backup")).restore },
  doctor: { summary: "check a data directory and the running server, and say what to fix", run: async () => (await import("./cli/doctor")).doctor },
  version: { summary: "print the version", run: async () => async () => void console.log(VERSION) },
  login: { summary: "sign in to a server by device code", run: async () => (await import("./cli/client")).login },
  logout: { summary: "end the stored session", run: async () => (await import("./cli/client")).logout },
  task: { summary: "create, list, follow and control tasks", run: async () => (await import("./cli/client")).task },
  codehost: { summary: "the GitHub app: codehost status | sync", run: async () => (await import("./cli/client")).codehost },
  token: { summary: "create a personal API token", run: async () => (await import("./cli/client")).token },
  worker: { summary: "run tasks on this machine: worker --server URL (pairs on first start)", run: async () => (await loadWorker()).worker },
};

export function registerCommand(name: string, summary: string, run: () => Promise<Command>) {
  COMMANDS[name] = { summary, run };
}

function usage() {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`);
  console.log(`ao ${VERSION}\n\nusage: ao <command> [options]\n\ncommands:\n${lines.join("\n")}`);
}

async function main(argv: string[]) {
  const [name, ...rest] = argv;
  // `ao help task create` is `ao task create --help`.
  if (name === "help" && rest[0] && COMMANDS[rest[0]]) return (await COMMANDS[rest[0]].run())([...rest.slice(1), "--help"]);
  if (!name || name === "help" || name === "--help" || name === "-h") return usage();
  if (name === "--version") return void console.log(VERSION);
  const command = COMMANDS[name];
  // Before anything else of the server loads: it may start the process again (src/server/allocator.ts).
  if (name === "serve") (await import("./server/allocator")).execWithServerAllocator();
  if (!command) {
    console.error(`ao: unknown command '${name}'`);
    usage();
    return 2;
  }
  return (await command.run())(rest);
}

/** node:util's parseArgs refusing the arguments (ERR_PARSE_ARGS_UNKNOWN_OPTION and its kin). */
const isUsageError = (err: unknown) => typeof (err as { code?: unknown })?.code === "string" && (err as { code: string }).code.startsWith("ERR_PARSE_ARGS_");

/** Runs the command line (argv without the executable and script): src/launch.ts in the executable, or below from source. */
export function run(argv: string[]) {
  main(argv).then(
    (code) => {
      if (typeof code === "number") process.exitCode = code;
    },
    (err) => {
      console.error(`ao: ${err instanceof Error ? err.message : String(err)}`);
      // An option the command does not take, or one without its value, is a usage error (2), not a failure (1).
      if (isUsageError(err)) {
        console.error(`run 'ao help ${argv[0]}' for usage`);
        process.exit(2);
      }
      process.exit(1);
    },
  );
}

if (import.meta.main) run(process.argv.slice(2));
