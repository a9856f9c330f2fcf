/**
 * The plan as its gate shows it: each step's id, name and dependencies (to draw the graph), and
 * fingerprints of its tool call, contract and other settings (to tell what changed since a
 * previous version). Step bodies stay out: the gate request and the journal event stay small.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../plan/digest.ts';
import type { Step } from '../plan/schema.ts';
import type { StepSketch } from '../runtime/payloads/index.ts';

/** Longest step name shown (a description may be 500 characters). */
const NAME_LIMIT = 80;

/**
 * Largest graph sent, in JSON bytes: it rides in the definition, the gate request and one
 * journal event. A larger plan's gate shows its size and step ids only.
 */
export const GRAPH_LIMIT_BYTES = 64 * 1024;

/** Every step's sketch in plan order, or undefined when they would exceed {@link GRAPH_LIMIT_BYTES}. */
export function planGraph(steps: readonly Step[]): StepSketch[] | undefined {
  const graph: StepSketch[] = [];
  // Brackets and commas of the JSON array.
  let bytes = 2;
  for (const step of steps) {
    const sketch = sketchOf(step);
    bytes += Buffer.byteLength(JSON.stringify(sketch)) + 1;
    // Stop early: a plan of 100,000 steps need not be sketched to learn it is too large.
    if (bytes > GRAPH_LIMIT_BYTES) return undefined;
    graph.push(sketch);
  }
  return graph;
}

function sketchOf(step: Step): StepSketch {
  const { id, description, tool, args, target, task, subscriptions, dependsOn, contract, ...settings } = step;
  const name = description.replace(/\s+/g, ' ').trim();
  return {
    id,
    name: name.length > NAME_LIMIT ? `${name.slice(0, NAME_LIMIT - 1)}…` : name,
    ...(dependsOn.length > 0 ? { dependsOn: [...dependsOn] } : {}),
    tool: tool ?? 'agent',
    args: fingerprint({ args, target, task, subscriptions }),
    ...(contract ? { contract: fingerprint(contract) } : {}),
    settings: fingerprint(settings),
  };
}

/** 128 bits of SHA-256 over canonical JSON: equal exactly when the values are (collisions are out of reach). */
function fingerprint(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 32);
}
