// Request values made from the OpenAPI document's schemas, for the probes: a plausible valid value
// (so a request is judged on who sends it, not on its body) and seeded wrong ones (the fuzzer).
export type Schema = Record<string, any>;

/** Values the probes' world supplies for fields of these names (ids of real rows, a usable URL...). */
export type Known = Record<string, unknown>;

/** Mulberry32: small, seeded, the same sequence on every run. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] };
}

function options(schema: Schema): Schema[] {
  return (schema.anyOf ?? schema.oneOf ?? []).filter((s: Schema) => s.type !== "null");
}

/** A value the schema accepts, preferring what `known` says for a field of that name. */
export function validValue(schema: Schema, known: Known = {}, name = ""): unknown {
  if (name in known) return known[name];
  if (schema.const !== undefined) return schema.const;
  // The last choice: for roles it is the least privileged, so a body never asks for more than its sender has.
  if (Array.isArray(schema.enum)) return schema.enum[schema.enum.length - 1];
  const alternatives = options(schema);
  if (alternatives.length) return validValue(alternatives[alternatives.length - 1], known, name);
  switch (schema.type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const key of schema.required ?? []) out[key] = validValue(schema.properties?.[key] ?? {}, known, key);
      return out;
    }
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => validValue(schema.items ?? {}, known));
    case "integer":
    case "number":
      return Math.max(schema.minimum ?? 1, schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case "boolean":
      return true;
    case "string": {
      if (schema.format === "email") return "probe@example.test";
      if (schema.format === "uri" || schema.format === "url") return "https://example.test/x";
      if (schema.format === "date-time") return new Date(Date.now() + 86_400_000).toISOString();
      const length = Math.max(schema.minLength ?? 1, 1);
      return "p".repeat(Math.min(length, schema.maxLength ?? length));
    }
    default:
      return "p";
  }
}

/** One wrong value for a schema, and what makes it wrong (for the failure message). */
export type Mutation = { why: string; value: unknown };

/** Wrong bodies for an object schema: each a small, deterministic variation on a valid one. */
export function wrongBodies(schema: Schema, known: Known, random: ReturnType<typeof prng>, count: number): Mutation[] {
  const base = validValue(schema, known) as Record<string, unknown>;
  const props = Object.entries<Schema>(schema.properties ?? {});
  const out: Mutation[] = [];
  const wrongFor = (s: Schema): unknown[] => {
    const type = s.type ?? options(s)[0]?.type;
    const wrong: unknown[] = [{ nested: true }, [1, 2]];
    if (type !== "string") wrong.push("a string", "");
    if (type !== "number" && type !== "integer") wrong.push(12345);
    if (type === "number" || type === "integer") wrong.push(-1e12, 1.5e300, -1);
    if (type === "string") wrong.push("x".repeat(200_000), 17, false);
    if (type !== "boolean") wrong.push(true);
    if (!(s.anyOf ?? s.oneOf ?? []).some((o: Schema) => o.type === "null")) wrong.push(null);
    return wrong;
  };
  for (const key of schema.required ?? []) {
    const { [key]: _, ...rest } = base;
    out.push({ why: `missing required ${key}`, value: rest });
  }
  out.push({ why: "an unknown field", value: { ...base, probeUnknownField: "x" } });
  out.push({ why: "an array instead of an object", value: [base] });
  while (out.length < count && props.length) {
    const [key, s] = random.pick(props);
    const value = random.pick(wrongFor(s));
    out.push({ why: `${key} = ${JSON.stringify(value)?.slice(0, 40)}`, value: { ...base, [key]: value } });
  }
  return out.slice(0, count);
}

/** Wrong query strings for the operation's query parameters. */
export function wrongQueries(parameters: Schema[], random: ReturnType<typeof prng>, count: number): Mutation[] {
  const query = parameters.filter((p) => p.in === "query");
  const out: Mutation[] = [];
  const values = ["-1", "0", "99999999999999999999", "abc", "x".repeat(5000), "1.5", "%00", "[]", "true"];
  while (out.length < count && query.length) {
    const p = random.pick(query);
    const v = random.pick(values);
    out.push({ why: `?${p.name}=${v.slice(0, 20)}`, value: `${encodeURIComponent(p.name)}=${encodeURIComponent(v)}` });
  }
  return out;
}

/** The JSON schema of an operation's JSON request body, or null. */
export function bodySchema(op: Schema): Schema | null {
  return op.requestBody?.content?.["application/json"]?.schema ?? null;
}
