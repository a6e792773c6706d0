// Request bodies whose unknown fields are refused (400 validation_failed naming them) instead of
// dropped. Elysia's normalize strips fields a schema does not name, which is right for most
// bodies (clients may send extras, e.g. RFC 8628's client_id). Where a typo would silently change
// the outcome (a token created with its owner's full role because "roles" was ignored, a PATCH
// that answers 200 and changes nothing), routes declare the body strict:
//
//   const Body = strictObject({ name: t.Optional(t.String()) });
//   .patch("/x", handler, { body: Body, transform: refuseUnknownFields(Body) })
import { t } from "elysia";
import type { ObjectOptions, TObject, TProperties } from "@sinclair/typebox";
import { invalid } from "./errors";

/** t.Object with additionalProperties: false, so the OpenAPI document says the fields are closed. */
export const strictObject = <T extends TProperties>(properties: T, options: ObjectOptions = {}) =>
  t.Object(properties, { ...options, additionalProperties: false });

/**
 * A transform hook: runs on the body as parsed, before normalization drops what the schema does not
 * name. Fields that hold objects are checked the same way, and must be objects: normalization would
 * turn `"config": true` (or 0, "x", [1], null) into `{}`, and a PATCH would wipe what was there.
 */
export function refuseUnknownFields(schema: TObject) {
  return ({ body }: { body: unknown }) => {
    if (body === null || typeof body !== "object" || Array.isArray(body)) return;
    const unknown: string[] = [];
    const mistyped: string[] = [];
    walk(schema, body as Record<string, unknown>, "", unknown, mistyped);
    if (mistyped.length > 0) throw invalid("the request body is invalid", mistyped.map((field) => ({ field, message: "Expected object" })));
    if (unknown.length === 0) return;
    throw invalid(
      `unknown field${unknown.length > 1 ? "s" : ""} in the request body: ${unknown.join(", ")}`,
      unknown.map((field) => ({ field, message: `unknown field; expected one of ${Object.keys(propertiesAt(schema, field)).join(", ")}` })),
    );
  };
}

const isObjectSchema = (s: unknown): s is TObject => (s as TObject)?.type === "object" && typeof (s as TObject).properties === "object";

function walk(schema: TObject, value: Record<string, unknown>, prefix: string, unknown: string[], mistyped: string[]) {
  for (const key of Object.keys(value)) if (!(key in schema.properties)) unknown.push(prefix + key);
  for (const [key, property] of Object.entries(schema.properties)) {
    const v = value[key];
    if (v === undefined || !isObjectSchema(property)) continue;
    if (v === null || typeof v !== "object" || Array.isArray(v)) mistyped.push(prefix + key);
    else walk(property, v as Record<string, unknown>, `${prefix}${key}.`, unknown, mistyped);
  }
}

/** The properties of the object that holds `field` (a dotted path). */
function propertiesAt(schema: TObject, field: string): TProperties {
  let at = schema;
  for (const key of field.split(".").slice(0, -1)) at = at.properties[key] as TObject;
  return at.properties;
}

/**
 * The first parser of a route whose JSON body is optional (`parse: [parseOptionalJson, "json"]`):
 * Elysia's own takes malformed JSON there for no body at all, and the route would answer 200 to a
 * request it did not understand. "json" after it keeps the body in the OpenAPI document.
 */
export async function parseOptionalJson({ request }: { request: Request }): Promise<unknown> {
  const text = await request.text();
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw invalid("the body is not valid JSON");
  }
}
