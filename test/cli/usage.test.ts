// Help texts and command lines refused before anything is sent (no server needed).
import { expect, test } from "bun:test";
import { newConfigDir, runCli } from "./helpers";

const env = () => ({ AO_CONFIG_DIR: newConfigDir() });

test("ao help <command> and --help print the command's usage and exit 0", async () => {
  const table: [string[], RegExp][] = [
    [["help"], /login +sign in to a server by device code[^]*task +create, list, follow and control tasks[^]*token +create a personal API token/],
    [["help", "login"], /^usage: ao login --server URL/],
    [["help", "logout"], /^usage: ao logout/],
    [["help", "task"], /^usage: ao task <command>/],
    [["help", "task", "create"], /^usage: ao task create --project P --title T \(--prompt TEXT \| --prompt-file F\)/],
    [["task", "list", "--help"], /^usage: ao task list/],
    [["task", "show", "-h"], /^usage: ao task show ID/],
    [["task", "events", "--help"], /^usage: ao task events ID \[--follow\]/],
    [["help", "task", "approve"], /^usage: ao task <pause\|resume\|cancel\|retry\|restart\|input\|approve\|deny> ID/],
    [["token", "--help"], /^usage: ao token create --name N/],
    [["help", "token", "create"], /^usage: ao token create --name N/],
    [["help", "serve"], /^usage: ao serve \[--port N\][^]*AO_DATA_DIR/],
    [["serve", "--help"], /^usage: ao serve /],
    [["help", "healthcheck"], /^usage: ao healthcheck \[PORT\]/],
    [["healthcheck", "-h"], /^usage: ao healthcheck /],
    [["help", "admin"], /^usage: ao admin create-user[^]*without --org they join no organization/],
    [["admin", "create-user", "--help"], /^usage: ao admin create-user/],
  ];
  for (const [args, out] of table) {
    const r = await runCli(args, env());
    expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" });
    expect(r.stdout).toMatch(out);
  }
});

test("a missing or unknown subcommand exits 2", async () => {
  const table: [string[], RegExp][] = [
    [["task"], /usage: ao task <command>/],
    [["task", "frob"], /unknown command 'task frob'/],
    [["task", "list", "--nope"], /Unknown option '--nope'/],
    [["task", "show", "a", "b"], /unexpected argument 'b'/],
    // The hint names a help page that exists.
    [["task", "input", "tsk_x"], /needs --input TEXT\nrun `ao help task input` for usage/],
    [["serve", "--prot", "1"], /Unknown option '--prot'\nrun 'ao help serve' for usage/],
    [["healthcheck", "--prot", "1"], /Unknown option '--prot'[^]*run 'ao help healthcheck' for usage/],
  ];
  for (const [args, out] of table) {
    const r = await runCli(args, env());
    expect({ args, code: r.code }).toEqual({ args, code: 2 });
    expect(r.stdout + r.stderr).toMatch(out);
  }
});
