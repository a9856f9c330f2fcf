/**
 * Turns a layout (sequences, Parallels, steps, child machines) into states. Sequences chain by
 * `Next`; a Parallel's branches each get their own scope and return their ledgers, which the
 * Parallel merges; a child machine becomes a `states:startExecution.sync:2` task.
 */
import type { AslState, Fragment } from './asl.ts';
import { START_EXECUTION_RETRY, START_EXECUTION_SYNC, transition } from './asl.ts';
import { entriesOf, STEPS } from './dataflow.ts';
import { jsonata } from './jsonata.ts';
import { childPlaceholder, ref } from './placeholders.ts';
import type { PlanStep } from './plan-step.ts';
import type { BranchScope } from './scope.ts';
import type { Layout } from './split.ts';

/** A child machine met while rendering, to be compiled as its own definition. */
export interface ChildBlock {
  readonly part: number;
  readonly body: Layout;
}

export interface LayoutRendererProps {
  readonly steps: ReadonlyMap<string, PlanStep>;
  /** Ledger entries a child machine needs from outside (its `liveIn`). */
  readonly childInputs: (block: ChildBlock) => readonly string[];
}

export const childTaskState = (part: number) => `Part ${part}`;

export class LayoutRenderer {
  /** Child machines referenced by what was rendered, in order of appearance. */
  readonly children: ChildBlock[] = [];

  constructor(private readonly props: LayoutRendererProps) {}

  render(layout: Layout, scope: BranchScope, next: string | undefined): Fragment {
    switch (layout.kind) {
      case 'step': {
        const step = this.props.steps.get(layout.id);
        if (!step) throw new Error(`layout names unknown step "${layout.id}"`);
        return step.toAsl(scope, next);
      }
      case 'seq': {
        const states: Record<string, AslState> = {};
        let following = next;
        for (let i = layout.items.length - 1; i >= 0; i--) {
          const fragment = this.render(layout.items[i] as Layout, scope, following);
          Object.assign(states, fragment.states);
          following = fragment.startAt;
        }
        return { startAt: following as string, states };
      }
      case 'par': {
        const name = scope.namer.parallel();
        const branches = layout.branches.map((branch) => {
          const branchScope = scope.child();
          const fragment = this.render(branch, branchScope, undefined);
          return { StartAt: fragment.startAt, States: { ...fragment.states, ...branchScope.sharedStates } };
        });
        return {
          startAt: name,
          states: {
            [name]: {
              Type: 'Parallel',
              Branches: branches,
              // Each branch returns `{steps}`: `.steps` maps over the branches.
              Output: jsonata('{"steps": $merge($states.result.steps)}'),
              ...transition(next),
            },
          },
        };
      }
      case 'child': {
        const block = { part: layout.part, body: layout.body };
        this.children.push(block);
        const name = childTaskState(layout.part);
        const input = `{"plan": $plan, "executionId": $executionId, "skipSteps": $mods.skipSteps, "argOverrides": $mods.argOverrides, "steps": ${entriesOf(
          this.props.childInputs(block),
        )}, "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": $states.context.Execution.Id}`;
        return {
          startAt: name,
          states: {
            [name]: {
              Type: 'Task',
              Comment: 'A block of the plan run as its own state machine; the parent waits for it.',
              Resource: START_EXECUTION_SYNC,
              Arguments: { StateMachineArn: ref(childPlaceholder(layout.part)), Input: jsonata(input) },
              Output: jsonata(`{"steps": $merge([${STEPS}, $states.result.Output.steps])}`),
              Retry: [START_EXECUTION_RETRY],
              ...transition(next),
            },
          },
        };
      }
    }
  }
}
