// What a person reads when a field fails its schema: what the field accepts, in words ("must be
// one of LOW, MEDIUM, HIGH, URGENT", "must be a string: one line of 1 to 200 characters"), instead of
// TypeBox's "Expected kind 'UnionEnum'" or "Expected union value".
import { ValueErrorType } from "@sinclair/typebox/errors";
import { LINE_MESSAGE, TEXT_MESSAGE } from "./text";
import { REF_MESSAGE } from "./refname";

type Schema = Record<string, any>;

/** The message of one schema error (TypeBox's, also inside Elysia's ValidationError). */
export function fieldMessage(e: { type?: number; schema?: unknown; message?: string; value?: unknown }): string {
  const schema = (e.schema ?? {}) as Schema;
  // A missing field fails its type check too ("Expected string"): say that it is missing.
  if (e.value === undefined && e.type !== undefined && e.type !== ValueErrorType.ObjectAdditionalProperties) return `is required: ${accepts(schema)}`;
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return `is required: ${accepts(schema)}`;
    case ValueErrorType.ObjectAdditionalProperties:
      return `unknown field; expected only ${Object.keys(schema.properties ?? {}).join(", ")}`;
    case ValueErrorType.StringFormat:
      if (schema.format === "text") return TEXT_MESSAGE;
      return schema.format === "line" ? LINE_MESSAGE : schema.format === "git-ref" ? REF_MESSAGE : `must be ${accepts(schema)}`;
    case ValueErrorType.StringMinLength:
    case ValueErrorType.StringMaxLength:
      if (typeof schema["x-accepts"] === "string") return `must be ${schema["x-accepts"]}`;
      return `must be ${length(schema) ?? "of another length"} long${schema.format === "line" ? ", on one line" : ""}`;
    case ValueErrorType.StringPattern:
      if (typeof schema["x-accepts"] === "string") return `must be ${schema["x-accepts"]}`;
      return `must match ${schema.pattern}${length(schema) ? ` and be ${length(schema)} long` : ""}`;
    case ValueErrorType.ArrayMinItems:
    case ValueErrorType.ArrayMaxItems:
      return `must have ${range(schema.minItems, schema.maxItems, "items")?.replace(/^from /, "") ?? "another number of items"}`;
    case undefined:
      return e.message ?? "invalid value";
    default:
      return `must be ${accepts(schema)}`;
  }
}

/** What a schema accepts, as a phrase that follows "must be". */
function accepts(schema: Schema): string {
  const values = enumValues(schema);
  if (values) return values.length === 1 ? values[0] : `one of ${values.join(", ")}`;
  if (Array.isArray(schema.anyOf)) {
    const members = schema.anyOf as Schema[];
    // Elysia coerces query and path values: a number or boolean field is a union with a string.
    const number = members.find((m) => m.type === "integer" || m.type === "number");
    if (number) return accepts(number);
    if (members.some((m) => m.type === "boolean")) return "true or false";
    const nonNull = members.filter((m) => m.type !== "null");
    const phrase = nonNull.map(accepts).join(", or ");
    return nonNull.length < members.length ? `${phrase}, or null` : phrase;
  }
  switch (schema.type) {
    case "string":
      return stringPhrase(schema);
    case "integer":
    case "number": {
      const what = schema.type === "integer" ? "an integer" : "a number";
      const r = range(schema.minimum, schema.maximum);
      return r ? `${what}${r.startsWith("from") ? " " : ", "}${r}` : what;
    }
    case "boolean":
      return "true or false";
    case "object": {
      const fields = Object.keys(schema.properties ?? {});
      return fields.length ? `an object with ${fields.join(", ")}` : "a JSON object";
    }
    case "array": {
      const r = range(schema.minItems, schema.maxItems, "items");
      return r ? `a list of ${r}` : "a list";
    }
    case "null":
      return "null";
  }
  return "a valid value";
}

function stringPhrase(schema: Schema): string {
  const len = length(schema);
  if (schema.format === "line") return `a string: one line of ${len ?? "text"}, with no control characters (newlines, tabs, escapes), not only spaces`;
  if (schema.format === "email") return "an email address";
  if (schema.format === "date-time") return "a date and time (ISO 8601, e.g. 2030-01-31T12:00:00Z)";
  if (typeof schema["x-accepts"] === "string") return schema["x-accepts"];
  return ["a string", len && `of ${len}`, schema.pattern && `matching ${schema.pattern}`].filter(Boolean).join(" ");
}

/** "1 to 200 characters", "at most 255 characters", or null. */
function length(schema: Schema): string | null {
  return range(schema.minLength, schema.maxLength, "characters", 0)?.replace(/^from /, "") ?? null;
}

function range(min: number | undefined, max: number | undefined, unit = "", floor = Number.NEGATIVE_INFINITY): string | null {
  const u = unit ? ` ${unit}` : "";
  const hasMin = min !== undefined && min > floor;
  if (hasMin && max !== undefined) return min === max ? `exactly ${min}${u}` : `from ${min} to ${max}${u}`;
  if (hasMin) return `at least ${min}${u}`;
  if (max !== undefined) return `at most ${max}${u}`;
  return null;
}

function enumValues(schema: Schema): string[] | null {
  if (Array.isArray(schema.enum)) return schema.enum.map(String);
  if (schema.const !== undefined) return [String(schema.const)];
  if (Array.isArray(schema.anyOf) && schema.anyOf.length > 0 && schema.anyOf.every((m: Schema) => m.const !== undefined)) {
    return schema.anyOf.map((m: Schema) => String(m.const));
  }
  return null;
}
