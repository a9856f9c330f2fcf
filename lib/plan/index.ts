/** lib/plan's public API: the plan model, its parsers, validator, digest, recovery and rendering. */
export * from './digest.ts';
export * from './load.ts';
export * from './parse.ts';
export * from './problems.ts';
export * from './recovery.ts';
export * from './references.ts';
export * from './render.ts';
export * from './schema.ts';
export type { Position, SourceMap } from './source-map.ts';
export * from './tools.ts';
export * from './validate.ts';
