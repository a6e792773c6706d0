// A project's agent policy (`project.policy.agent`): which tool calls an agent makes without asking,
// which always need a person, which are refused. The server validates it; the worker applies it.
//
//   { "allow": ["shell:bun test*"], "ask": ["shell:git push*", "network"], "deny": [], "default": "ask" }
//
// A rule is a kind (`read`, `search`, `edit`, `shell`, `network`, `other`), optionally followed by
// `:PATTERN` matched against the call's subject (the command line of a shell call, the path of a
// read or an edit, the URL of a network call), or `tool:NAME` for a tool by its agent's own name
// (`tool:WebFetch`). `*` in a pattern matches any run of characters. Order: deny, then ask, then
// allow; a call no rule matches gets `default` when the project set one, else the built-in rules.
import { Type as T, type Static } from "@sinclair/typebox";
import { Matching } from "../lib/text";

export const TOOL_KINDS = ["read", "search", "edit", "shell", "network", "other"] as const;
export type ToolKind = (typeof TOOL_KINDS)[number];

const Rule = Matching("^(read|search|edit|shell|network|other|tool)(:.+)?$", "a rule: read, search, edit, shell, network or other, optionally :PATTERN, or tool:NAME", { minLength: 1, maxLength: 500 });
const Rules = T.Array(Rule, { maxItems: 200 });

export const AgentPolicy = T.Object(
  {
    allow: T.Optional(Rules),
    ask: T.Optional(Rules),
    deny: T.Optional(Rules),
    default: T.Optional(T.Union([T.Literal("allow"), T.Literal("ask"), T.Literal("deny")])),
  },
  { additionalProperties: false },
);
export type AgentPolicy = Static<typeof AgentPolicy>;
