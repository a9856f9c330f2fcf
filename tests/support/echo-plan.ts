/**
 * Plans of `echo` steps, each proven by an assert contract on its own output: all their time is
 * harness (no tool does work), so tests and benchmarks of the harness use them.
 */

/** A step that echoes its id and whose contract checks it did. */
export function echoStep(id: string, dependsOn: readonly string[] = [], description = `Echo ${id}`) {
  return {
    id,
    description,
    dependsOn: [...dependsOn],
    tool: 'echo',
    args: { message: id },
    contract: { kind: 'assert', expression: `output.message = "${id}"` },
  };
}

/** A plan of echo steps, one after another, with any plan-level fields `extra` sets. */
export function echoChainPlan(id: string, stepIds: readonly string[], extra: Record<string, unknown> = {}) {
  return {
    id,
    version: 1,
    objective: `Echo ${stepIds.length} values in order (${stepIds[0]} first), each step proven by an assert contract`,
    sizePolicy: { minSteps: 1, maxSteps: 100_000 },
    steps: stepIds.map((step, i) => echoStep(step, i === 0 ? [] : [stepIds[i - 1] as string])),
    ...extra,
  };
}
