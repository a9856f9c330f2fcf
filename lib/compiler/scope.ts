/**
 * A branch scope: the States object of one (sub-)machine or Parallel branch. State names are
 * unique across the whole definition (AWS requires it), and Fail states are shared per branch:
 * a Choice can only jump to states of its own branch.
 */
import { MACHINE_ERRORS } from '../runtime/payloads/index.ts';
import type { AslStates } from './asl.ts';
import { jsonata } from './jsonata.ts';

/** Hands out unique state names across one definition. */
export class StateNamer {
  private parallels = 0;
  private scopes = 0;

  /** `Parallel 3`: Parallel states have no step to be named after. */
  parallel(): string {
    this.parallels += 1;
    return `Parallel ${this.parallels}`;
  }

  /** A new scope number, used to name the scope's shared Fail states. */
  scope(): number {
    this.scopes += 1;
    return this.scopes;
  }
}

type FailKind = 'aborted' | 'criticalStepSkipped' | 'gateTimedOut';

const FAIL_LABELS: Record<FailKind, string> = {
  aborted: 'Aborted',
  criticalStepSkipped: 'Critical step skipped',
  gateTimedOut: 'Gate timed out',
};

export class BranchScope {
  /** Unique in the definition; names the shared states. */
  readonly id: number;
  private readonly fails: AslStates = {};
  private readonly builders: (() => AslStates)[] = [];

  constructor(readonly namer: StateNamer) {
    this.id = namer.scope();
  }

  /**
   * States shared by the scope's steps (its Fail states, its escalation), added to its States
   * when the branch is assembled; built then, so a scope of n steps renders them once.
   */
  get sharedStates(): AslStates {
    const built = this.builders.map((build) => build());
    return Object.assign({}, this.fails, ...built);
  }

  /** Adds shared states, built when the branch is assembled. */
  addShared(build: () => AslStates): void {
    this.builders.push(build);
  }

  /**
   * The name of this scope's Fail state for `kind`, created on first use. Its Cause is the
   * `current` record of the state's input (the step id and what failed), never a token.
   */
  fail(kind: FailKind): string {
    const name = `${FAIL_LABELS[kind]} ${this.id}`;
    if (!this.fails[name]) {
      this.fails[name] = {
        Type: 'Fail',
        Error: MACHINE_ERRORS[kind],
        Cause: jsonata('$string($states.input.current)'),
      };
    }
    return name;
  }

  /** A nested scope (a Parallel branch) sharing the namer. */
  child(): BranchScope {
    return new BranchScope(this.namer);
  }
}
