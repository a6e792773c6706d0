// The feature modules, in mounting order. Each is (core) => Elysia plugin.
import type { Elysia } from "elysia";
import type { Core } from "./core";

export const MODULES: ((core: Core) => Elysia<any, any, any, any, any, any, any>)[] = [];
