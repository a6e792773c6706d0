// `ao help <command>` and `--help` texts of the command-line client.
export const HELP: Record<string, string> = {
  login: `usage: ao login --server URL [--org ORG]

Signs in by device code: prints a code and a link; open the link, sign in to the web app
and confirm the code. The session is stored in $AO_CONFIG_DIR, else $XDG_CONFIG_HOME/ao,
else ~/.config/ao (session.json, mode 0600) and refreshed automatically.

  --server URL   the ao server, e.g. https://ao.example.com
  --org ORG      organization id or name to use by default (else your first one)`,

  logout: `usage: ao logout

Ends the session on the server (every token of this sign-in stops working) and deletes the
stored session file.`,

  task: `usage: ao task <command> [options]

commands:
  create     create a task (and --wait for its outcome)
  list       list tasks
  show       show one task
  events     print a task's timeline (--follow to keep watching)
  apply-plan create the tasks a completed plan proposes
  pause, resume, cancel, retry, restart, input, approve, deny
             apply an action to a task

Every command takes --org ORG (id or name; else AO_ORG, else the session's organization).
Run \`ao help task <command>\` for its options.

Without a session, AO_SERVER and AO_TOKEN (a personal API token, aot_...) configure the client.`,

  "task create": `usage: ao task create --project P --title T (--prompt TEXT | --prompt-file F)
                      [--priority LOW|MEDIUM|HIGH|URGENT] [--kind task|plan|review]
                      [--base B --head H] [--agent claude|codex|exec] [--wait] [--json] [--org ORG]

  --project P        project id (prj_...) or name
  --agent NAME       run it with this agent (only workers that have it take it)
  --prompt-file F    read the prompt from file F ('-' reads standard input)
  --kind review      needs --base and --head (the refs to review)
  --wait             follow the task live and print its timeline; exit 0 when it
                     completes, 1 when it fails or is cancelled, 3 when it needs input
                     or approval; a completed plan ends with the tasks it proposes
  --json             print the task as JSON (with --wait: the final task)`,

  "task list": `usage: ao task list [--status S] [--project P] [--kind K] [--parent ID] [--limit N] [--json] [--org ORG]

Newest first. --status is one of queued, running, paused, needs_input, needs_approval,
completed, failed, cancelled. --parent lists the tasks a plan made. --limit defaults to 50.`,

  "task show": `usage: ao task show ID [--json] [--org ORG]`,

  "task apply-plan": `usage: ao task apply-plan ID [--json] [--org ORG]

Creates the tasks a completed plan proposes (\`ao task show\` lists them) in the plan's
project and prints them; run again, it prints the same tasks and creates none.
  --json     the created tasks as a JSON array`,

  "task events": `usage: ao task events ID [--follow] [--after SEQ] [--json] [--org ORG]

Prints the timeline, one line per event: #seq time type text.
  --follow   keep printing new events live until the task completes, fails or is cancelled
  --after    start after this seq
  --json     JSON: an array of events; with --follow one event per line`,

  "task action": `usage: ao task <pause|resume|cancel|retry|restart|input|approve|deny> ID
                      [--reason R] [--input TEXT] [--json] [--org ORG]

  --input TEXT   the answer handed to the task (required by 'input')
  --reason R     why (at most 2,000 characters), e.g. for 'deny'`,

  token: `usage: ao token create --name N [--role owner|admin|member|viewer] [--expires-at ISO] [--json] [--org ORG]

Creates a personal API token (aot_...) for the organization, from a signed-in session.
The value is printed once; use it as AO_TOKEN with AO_SERVER in scripts and CI.`,

  codehost: `usage: ao codehost status [--json] [--org ORG]
       ao codehost sync [--json] [--org ORG]

status  the server's GitHub app, this organization's installations and your own connection
sync    list the app's installations and every page of their repositories now (settings.manage)

The app is created, installed and connected from the web app's GitHub page (README "Connect GitHub").`,
};

HELP["token create"] = HELP.token!;
HELP["codehost status"] = HELP.codehost!;
HELP["codehost sync"] = HELP.codehost!;
for (const a of ["pause", "resume", "cancel", "retry", "restart", "input", "approve", "deny"]) HELP[`task ${a}`] = HELP["task action"]!;
