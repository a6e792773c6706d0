// The file is embedded in the executable (import ... with { type: "file" }): its path, in
// development the real one, in dist/ao one inside the executable.
declare const path: string;
export default path;
