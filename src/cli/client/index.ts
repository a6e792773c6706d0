// The command-line client's commands, loaded lazily by src/main.ts.
export { login, logout } from "./commands/login";
export { task } from "./commands/task";
export { token } from "./commands/token";
export { codehost } from "./commands/codehost";
