export const iso = (ms: number = Date.now()): string => new Date(ms).toISOString();
