/**
 * A branch scope: the States object of one (sub-)machine or Parallel branch. State names are
 * unique across the whole definition (AWS requires it), and one Fail state is shared per branch:
 * a Choice can only jump to states of its own branch.
 */
import { MACHINE_ERRORS } from '../runtime/payloads/index.ts';
import { jsonata, quote } from './jsonata.ts';
import { Fail, type State } from './states/index.ts';

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

export class BranchScope {
  /** Unique in the definition; names the shared states. */
  readonly id: number;
  private stop: Fail | undefined;
  private readonly builders: (() => readonly State[])[] = [];

  constructor(readonly namer: StateNamer) {
    this.id = namer.scope();
  }

  /**
   * States shared by the scope's steps (its Fail state, its escalation), added to its States
   * when the branch is assembled; built then, so a scope of n steps renders them once.
   */
  get sharedStates(): State[] {
    // Building may ask for the Fail state, which then comes first.
    const built = this.builders.flatMap((build) => build());
    return this.stop ? [this.stop, ...built] : built;
  }

  /** Adds shared states, built when the branch is assembled. */
  addShared(build: () => readonly State[]): void {
    this.builders.push(build);
  }

  /**
   * The name of this scope's one Fail state, created on first use. Its Cause is the `current`
   * record of the state's input (the step id and what failed), never a token; its Error is read
   * from that record, so one state serves every stop of the branch: a gate that timed out names
   * itself in `current.gate` (`"step"`, `"escalation"`) → `Plangate.GateTimedOut`; a SKIP decision
   * reaching it (only a critical step's does) → `Plangate.CriticalStepSkipped`; anything else
   * (ABORT, or an answer that is no decision) → `Plangate.Aborted`.
   */
  fail(): string {
    this.stop ??= new Fail(`Stop ${this.id}`, {
      error: jsonata(
        `($c := $states.input.current; $type($c.gate) = "string" ? ${quote(MACHINE_ERRORS.gateTimedOut)} : $c.decision = "SKIP" ? ${quote(MACHINE_ERRORS.criticalStepSkipped)} : ${quote(MACHINE_ERRORS.aborted)})`,
      ),
      cause: jsonata('$string($states.input.current)'),
    });
    return this.stop.name;
  }

  /** A nested scope (a Parallel branch) sharing the namer. */
  child(): BranchScope {
    return new BranchScope(this.namer);
  }
}
