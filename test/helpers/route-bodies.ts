// Prints, as JSON, how each route of a server that no request has reached takes its body: whether
// the body is closed (additionalProperties: false) or optional, and whether the route refuses
// unknown fields (refuseUnknownFields) and parses an optional body with parseOptionalJson. Run in a
// process of its own by test/server/strict-bodies.test.ts.
import { OptionalKind } from "@sinclair/typebox";
import { startTestServer } from "./server";
import { isUnknownFieldsRefusal, parseOptionalJson } from "../../src/server/strict";

// The hooks of Elysia's routes: a function, or {fn, scope}; a parser may be a name ("json").
const hooksOf = (hook: unknown) => [hook].flat().filter(Boolean).map((h) => (h as { fn?: unknown }).fn ?? h);

const s = await startTestServer();
const routes = (s.app.routes as { method: string; path: string; hooks: Record<string, any> }[])
  .filter((r) => r.hooks?.body)
  .map((r) => ({
    route: `${r.method} ${r.path}`,
    closed: r.hooks.body.additionalProperties === false,
    optional: r.hooks.body[OptionalKind] === "Optional",
    refusesUnknown: hooksOf(r.hooks.transform).some(isUnknownFieldsRefusal),
    parsesOptional: hooksOf(r.hooks.parse).includes(parseOptionalJson),
  }));
await s.stop();
console.log(JSON.stringify(routes));
