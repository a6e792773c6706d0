// TypeBox checks compiled when first used rather than when their module loads: every start of
// the server (and of every other command) would otherwise compile checks that only one kind of
// message needs. The worker protocol's message check alone takes about 5 ms to compile.
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";

/** The compiled check of `schema`, compiled on the first call and kept. */
export function lazyCheck<T extends TSchema>(schema: T): () => TypeCheck<T> {
  let compiled: TypeCheck<T> | undefined;
  return () => (compiled ??= TypeCompiler.Compile(schema));
}
