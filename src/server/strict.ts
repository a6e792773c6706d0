// Request bodies whose unknown fields are refused (400 validation_failed naming them) instead of
// dropped. Elysia's normalize strips fields a schema does not name, which is right for most
// bodies (clients may send extras, e.g. RFC 8628's client_id). Where a typo would silently change
// the outcome (a token created with its owner's full role because "roles" was ignored, a PATCH
// that answers 200 and changes nothing), routes declare the body strict:
//
//   const Body = strictObject({ name: t.Optional(t.String()) });
//   .patch("/x", handler, { body: Body, transform: refuseUnknownFields(Body) })
import { t } from "elysia";
import type { ObjectOptions, TArray, TObject, TProperties } from "@sinclair/typebox";
import { invalid } from "./errors";
import { bodyText } from "./utf8";

/** t.Object with additionalProperties: false, so the OpenAPI document says the fields are closed. */
export const strictObject = <T extends TProperties>(properties: T, options: ObjectOptions = {}) =>
  t.Object(properties, { ...options, additionalProperties: false });

/**
 * A transform hook: runs on the body as parsed, before normalization drops what the schema does not
 * name. Fields that hold objects are checked the same way, and must be objects: normalization would
 * turn `"config": true` (or 0, "x", [1], null) into `{}`, and a PATCH would wipe what was there.
 */
export function refuseUnknownFields(schema: TObject) {
  const refuse = ({ body }: { body: unknown }) => {
    if (body === null || typeof body !== "object" || Array.isArray(body)) return;
    const unknown: string[] = [];
    const mistyped: string[] = [];
    walk(schema, body as Record<string, unknown>, "", unknown, mistyped);
    if (mistyped.length > 0) throw invalid("the request body is invalid", mistyped.map((field) => ({ field, message: "Expected object" })));
    if (unknown.length === 0) return;
    throw invalid(
      `unknown field${unknown.length > 1 ? "s" : ""} in the request body: ${unknown.join(", ")}`,
      unknown.map((field) => ({ field, message: expectedFields(Object.keys(propertiesAt(schema, field))) })),
    );
  };
  refusers.add(refuse);
  return refuse;
}

const refusers = new WeakSet<object>();

const expectedFields = (names: string[]) => (names.length ? `unknown field; expected one of ${names.join(", ")}` : "unknown field; this request takes no body fields");

/**
 * Whether a route's transform hook is one refuseUnknownFields made: for the audit of every route
 * (test/helpers/route-bodies.ts), which requires it of each route whose body is closed, and
 * parseOptionalJson of each whose body is optional.
 */
export const isUnknownFieldsRefusal = (hook: unknown) => typeof hook === "function" && refusers.has(hook);

const isObjectSchema = (s: unknown): s is TObject => (s as TObject)?.type === "object" && typeof (s as TObject).properties === "object";
const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
/** The object schema of an array's items, or null. */
const itemsOf = (s: unknown): TObject | null => ((s as TArray)?.type === "array" && isObjectSchema((s as TArray).items) ? (s as TArray).items as TObject : null);

function walk(schema: TObject, value: Record<string, unknown>, prefix: string, unknown: string[], mistyped: string[]) {
  for (const key of Object.keys(value)) if (!(key in schema.properties)) unknown.push(prefix + key);
  for (const [key, property] of Object.entries(schema.properties)) {
    const v = value[key];
    if (v === undefined) continue;
    if (isObjectSchema(property)) {
      if (isPlainObject(v)) walk(property, v, `${prefix}${key}.`, unknown, mistyped);
      else mistyped.push(prefix + key);
    }
    // The items of a list of objects (a project's repositories): their own type is the schema's to check.
    const items = itemsOf(property);
    if (items && Array.isArray(v)) v.forEach((item, i) => isPlainObject(item) && walk(items, item, `${prefix}${key}.${i}.`, unknown, mistyped));
  }
}

/** The properties of the object that holds `field` (a dotted path; a number is an item of a list). */
function propertiesAt(schema: TObject, field: string): TProperties {
  let at: TObject = schema;
  for (const key of field.split(".").slice(0, -1)) {
    if (/^\d+$/.test(key)) continue;
    const next = at.properties[key];
    at = itemsOf(next) ?? (next as TObject);
  }
  return at.properties;
}

/**
 * The first parser of a route whose JSON body is optional (`parse: [parseOptionalJson, "json"]`):
 * Elysia's own takes malformed JSON there for no body at all, and the route would answer 200 to a
 * request it did not understand. "json" after it keeps the body in the OpenAPI document.
 */
export async function parseOptionalJson({ request }: { request: Request }): Promise<unknown> {
  const text = await bodyText(request);
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw invalid("the body is not valid JSON");
  }
}

/**
 * The body of an action route that takes none (approve, rotate-secret, redeliver, apply-plan...):
 * an empty or absent body is accepted, a field is refused rather than ignored, since a caller who
 * sends one ({"tasks": [0, 2]}, {"dryRun": true}) expects it to change what happens.
 *
 *   .post("/x/approve", handler, { ...noBody, permission: "worker.approve" })
 */
export const NoBody = t.Optional(strictObject({}, { description: "No fields: an empty or absent body" }));
export const noBody = { body: NoBody, parse: [parseOptionalJson, "json"] as [typeof parseOptionalJson, "json"], transform: refuseUnknownFields(NoBody) };
