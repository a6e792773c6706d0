// How a form sorts the API's complaints (src/web/app/api.ts complaints(), used by the pages'
// useForm): beside the fields it shows, and in one sentence naming any other field, so that
// none is dropped. Scenarios as data: the refusal, the fields shown, what goes where.
import { describe, expect, test } from "bun:test";
import { ApiError, complaints } from "../../src/web/app/api";

const invalid = (...details: { field: string; message: string }[]) => new ApiError(400, "validation_failed", "the request body is invalid", details);

const scenarios: { name: string; err: unknown; shown: string[]; fieldOf?: (f: string) => string; fields: Record<string, string>; rest: string | null }[] = [
  {
    name: "complaints about shown fields go beside them, and nothing below",
    err: invalid({ field: "name", message: "must not be blank" }, { field: "url", message: "not a git URL" }),
    shown: ["name", "url"],
    fields: { name: "must not be blank", url: "not a git URL" },
    rest: null,
  },
  {
    name: "one about a field the form does not show is said below, naming it, beside the shown one",
    err: invalid({ field: "name", message: "must not be blank" }, { field: "scopes", message: "unknown field" }),
    shown: ["name"],
    fields: { name: "must not be blank" },
    rest: "Please check: scopes: unknown field.",
  },
  {
    name: "a form that shows no field says them all",
    err: invalid({ field: "code", message: "required" }, { field: "(root)", message: "must be an object." }),
    shown: [],
    fields: {},
    rest: "Please check: code: required; the request: must be an object.",
  },
  {
    name: "the API's name is mapped to the form's before it is looked for; the API's is the one said",
    err: invalid({ field: "config.label", message: "at most 100 characters" }, { field: "config.secret", message: "unknown field" }),
    shown: ["label"],
    fieldOf: (f) => f.replace(/^config\./, ""),
    fields: { label: "at most 100 characters" },
    rest: "Please check: config.secret: unknown field.",
  },
  {
    name: "a conflict naming a shown field goes beside it",
    err: new ApiError(409, "conflict", "a project with this name already exists", { field: "name" }),
    shown: ["name", "url"],
    fields: { name: "A project with this name already exists." },
    rest: null,
  },
  {
    name: "a conflict naming a field the form does not show is said below",
    err: new ApiError(409, "conflict", "this project already has a repository with this URL", { field: "url" }),
    shown: ["name"],
    fields: {},
    rest: "This project already has a repository with this URL.",
  },
  {
    name: "a refusal about no field is left to the form's own error",
    err: new ApiError(403, "forbidden", "your role (viewer) lacks the permission task.create"),
    shown: ["name"],
    fields: {},
    rest: null,
  },
];

describe("web: a form's complaints by field", () => {
  for (const c of scenarios) {
    test(c.name, () => {
      expect(complaints(c.err, c.shown, c.fieldOf)).toEqual({ fields: c.fields, rest: c.rest });
    });
  }
});
