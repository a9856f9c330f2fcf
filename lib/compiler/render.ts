/**
 * Turns a layout (sequences, Parallels, steps, child machines) into states. Sequences chain by
 * `Next`; a Parallel's branches each get their own scope and return their ledgers, which the
 * Parallel merges; a child machine becomes a `states:startExecution.sync:2` task.
 */
import { START_EXECUTION_RETRY } from './asl.ts';
import { entriesOf, STEPS } from './dataflow.ts';
import { jsonata } from './jsonata.ts';
import { childPlaceholder } from './placeholders.ts';
import type { PlanStep } from './plan-step.ts';
import type { BranchScope } from './scope.ts';
import type { Layout } from './split.ts';
import { type Fragment, Parallel, StartExecution, type State, StateGraph } from './states/index.ts';

/** A child machine met while rendering, to be compiled as its own definition. */
export interface ChildBlock {
  readonly part: number;
  readonly body: Layout;
}

/** A layout rendered: its states, and the child machines they start, in order of appearance. */
export interface RenderedLayout extends Fragment {
  readonly parts: readonly ChildBlock[];
}

export interface LayoutRendererProps {
  readonly steps: ReadonlyMap<string, PlanStep>;
  /** Ledger entries a child machine needs from outside (its `liveIn`). */
  readonly childInputs: (block: ChildBlock) => readonly string[];
}

export const childTaskState = (part: number) => `Part ${part}`;

export class LayoutRenderer {
  constructor(private readonly props: LayoutRendererProps) {}

  render(layout: Layout, scope: BranchScope, next: string | undefined): RenderedLayout {
    switch (layout.kind) {
      case 'step': {
        const step = this.props.steps.get(layout.id);
        if (!step) throw new Error(`layout names unknown step "${layout.id}"`);
        return { ...step.toAsl(scope, next), parts: [] };
      }
      case 'seq': {
        const states: State[] = [];
        const parts: ChildBlock[] = [];
        let following = next;
        for (let i = layout.items.length - 1; i >= 0; i--) {
          const rendered = this.render(layout.items[i] as Layout, scope, following);
          for (const state of rendered.states) states.push(state);
          parts.push(...rendered.parts);
          following = rendered.startAt;
        }
        return { startAt: following as string, states, parts };
      }
      case 'par': {
        const name = scope.namer.parallel();
        const parts: ChildBlock[] = [];
        const branches = layout.branches.map((branch) => {
          const branchScope = scope.child();
          const rendered = this.render(branch, branchScope, undefined);
          parts.push(...rendered.parts);
          return StateGraph.of(rendered).addAll(branchScope.sharedStates);
        });
        const parallel = new Parallel(name, {
          branches,
          // Each branch returns `{steps}`: `.steps` maps over the branches.
          output: jsonata('{"steps": $merge($states.result.steps)}'),
          next,
        });
        return { startAt: name, states: [parallel], parts };
      }
      case 'child': {
        const block = { part: layout.part, body: layout.body };
        const input = `{"plan": $plan, "executionId": $executionId, "skipSteps": $mods.skipSteps, "argOverrides": $mods.argOverrides, "steps": ${entriesOf(
          this.props.childInputs(block),
        )}, "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": $states.context.Execution.Id}`;
        const task = new StartExecution(childTaskState(layout.part), {
          comment: 'A block of the plan run as its own state machine; the parent waits for it.',
          stateMachine: childPlaceholder(layout.part),
          input: jsonata(input),
          output: jsonata(`{"steps": $merge([${STEPS}, $states.result.Output.steps])}`),
          retry: [START_EXECUTION_RETRY],
          next,
        });
        return { startAt: task.name, states: [task], parts: [block] };
      }
    }
  }
}
