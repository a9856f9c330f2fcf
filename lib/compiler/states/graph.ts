/**
 * A state graph: the States of one definition or Parallel branch. It refuses a second state of
 * the same name as it is built (AWS requires names unique across a definition, Parallel
 * branches included; a plain object would let the second overwrite the first without a word),
 * renders its states in the order they were added, lists the resources they use, and walks
 * the happy path the compile report counts.
 */
import type { AslDefinition, AslStates, ResourceReference } from '../asl.ts';
import type { Branch, State } from './state.ts';

/** A building block's states, and the one a run enters first. */
export interface Fragment {
  readonly startAt: string;
  readonly states: readonly State[];
}

/** What a run's happy path through a graph costs. */
export interface HappyPath {
  /** States entered, each one billed transition. */
  readonly states: number;
  readonly historyEvents: number;
}

export class StateGraph implements Branch {
  private readonly byName = new Map<string, State>();
  private readonly allNames = new Set<string>();

  constructor(
    /** The state a run of this graph enters first. */
    readonly startAt: string,
    states: Iterable<State> = [],
  ) {
    this.addAll(states);
  }

  /** A graph of `fragment`'s states, starting where it starts. */
  static of(fragment: Fragment): StateGraph {
    return new StateGraph(fragment.startAt, fragment.states);
  }

  get names(): ReadonlySet<string> {
    return this.allNames;
  }

  /** Adds `state`; throws, naming it, when the graph (or a branch inside it) already has that name. */
  add(state: State): this {
    this.claim(state.name);
    for (const branch of state.branches) for (const name of branch.names) this.claim(name);
    this.byName.set(state.name, state);
    return this;
  }

  addAll(states: Iterable<State>): this {
    for (const state of states) this.add(state);
    return this;
  }

  /** The states, in the order they were added. */
  get states(): Iterable<State> {
    return this.byName.values();
  }

  /** The graph's own states as ASL, in the order they were added. */
  renderStates(): AslStates {
    const states: AslStates = {};
    for (const [name, state] of this.byName) states[name] = state.toAsl();
    return states;
  }

  toAsl(): { StartAt: string; States: AslStates } {
    if (!this.byName.has(this.startAt))
      throw new Error(`StartAt "${this.startAt}" names no state of its graph`);
    return { StartAt: this.startAt, States: this.renderStates() };
  }

  /** A whole definition of these states (JSONata query language). */
  toDefinition(comment: string): AslDefinition {
    const { StartAt, States } = this.toAsl();
    return { Comment: comment, QueryLanguage: 'JSONata', StartAt, States };
  }

  /**
   * What the states use (Parallel branches included), each once, in the order the ASL first
   * names them.
   */
  resources(): ResourceReference[] {
    const out = new Map<string, ResourceReference>();
    for (const state of this.byName.values())
      for (const resource of state.resources())
        if (!out.has(resource.placeholder)) out.set(resource.placeholder, resource);
    return [...out.values()];
  }

  /**
   * The happy path from `from` (default: the start) until it leaves the graph or ends: every
   * Choice takes its happy way, every other state its Next.
   */
  happyPath(from: string = this.startAt): HappyPath {
    let states = 0;
    let historyEvents = 0;
    const seen = new Set<string>();
    for (let name: string | undefined = from; name !== undefined; ) {
      const state = this.byName.get(name);
      if (!state) break;
      if (seen.has(name)) throw new Error(`the happy path loops back to state "${name}"`);
      seen.add(name);
      states += 1;
      historyEvents += state.historyEvents;
      name = state.happyNext;
    }
    return { states, historyEvents };
  }

  private claim(name: string): void {
    if (this.allNames.has(name))
      throw new Error(
        `state "${name}" is defined twice: state names must be unique in a definition, Parallel branches included`,
      );
    this.allNames.add(name);
  }
}
