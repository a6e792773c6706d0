// TypeBox checks compiled at their first use rather than when their module loads: each compile is
// a few milliseconds of generated code, and the server's start loads every module (WorkerMessage
// alone took 6.5 ms). The schemas are the protocol's own objects, which no HTTP route is given
// (Elysia alters the schemas of its routes: protocol-routes.ts gives it copies), so compiling
// later checks the same thing.
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";

/** `check()` is the compiled check of `schema`, compiled at the first call. */
export function compiledOnFirstUse<T extends TSchema>(schema: T): () => TypeCheck<T> {
  let check: TypeCheck<T> | undefined;
  return () => (check ??= TypeCompiler.Compile(schema));
}
