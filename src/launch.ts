// The executable's entry point (scripts/build.ts). `ao serve` starts itself a second time to set
// the memory allocator (src/server/allocator.ts); done here, the first start loads only this and
// the allocator module, not the program's bundle (the bytecode JavaScriptCore reads at start).
// Every command then loads the program (src/main.ts), an entry point of its own, by a specifier
// the bundler does not follow.
import { execWithServerAllocator } from "./server/allocator";

const MAIN_ENTRY: string = "./main.ts";

if (process.argv[2] === "serve") execWithServerAllocator();
const { run } = (await import(MAIN_ENTRY)) as typeof import("./main");
run(process.argv.slice(2));
