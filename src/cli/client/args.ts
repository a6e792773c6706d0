// Command-line parsing: node's parseArgs in strict mode, with its errors turned into usage errors.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "./errors";

type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export function parse(args: string[], options: Options, maxPositionals = 0): Parsed {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs explains the problem well ("Unknown option '--x'"); drop its advice about "--".
    const message = err instanceof Error ? err.message.split(". To specify")[0]! : String(err);
    throw new UsageError(message.replace(/\.$/, ""));
  }
  if (!parsed.values.help && parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument '${parsed.positionals[maxPositionals]}'`);
  }
  return parsed as Parsed;
}

export function str(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === "string" ? v : undefined;
}

export function required(p: Parsed, name: string): string {
  const v = str(p, name);
  if (v === undefined || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

export function flag(p: Parsed, name: string): boolean {
  return p.values[name] === true;
}

export function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], normalize = (v: string) => v): T | undefined {
  if (value === undefined) return undefined;
  const v = normalize(value);
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`--${name} must be one of ${allowed.join(", ")} (got '${value}')`);
  return v as T;
}

export function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive whole number (got '${value}')`);
  return n;
}
