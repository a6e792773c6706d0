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

/** A transform hook: runs on the body as parsed, before normalization drops what the schema does not name. */
export function refuseUnknownFields(schema: TObject) {
  const known = new Set(Object.keys(schema.properties));
  return ({ body }: { body: unknown }) => {
    if (body === null || typeof body !== "object" || Array.isArray(body)) return;
    const unknown = Object.keys(body).filter((k) => !known.has(k));
    if (unknown.length === 0) return;
    throw invalid(
      `unknown field${unknown.length > 1 ? "s" : ""} in the request body: ${unknown.join(", ")}`,
      unknown.map((field) => ({ field, message: `unknown field; expected one of ${[...known].join(", ")}` })),
    );
  };
}
