// Every table of ao. Each feature's tables live in their own file.
export * from "./identity";
export * from "./tasks";
export * from "./workers";
export * from "./integrations";
export * from "./codehost";
