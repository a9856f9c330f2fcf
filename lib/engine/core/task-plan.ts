/**
 * What a Task state's definition fixes about its calls (how its resource is called, which events
 * describe it, whether it has a timeout or heartbeat, the check AWS makes on its parameters),
 * worked out once per state of an engine's definitions.
 */
import type { TaskIds } from '../persistence/execution-history.ts';
import type { StateDefinition } from './definition.ts';
import { type ParameterCheck, parameterCheckFor } from './service-parameters.ts';

/** How a Task's Resource is called and which history events describe it. */
export interface ResourceKind {
  readonly family: 'LambdaFunction' | 'Activity' | 'Task';
  readonly resourceType: string;
  readonly resourceName: string;
  readonly pattern: 'request' | 'sync' | 'token';
}

/** The history event types of one family of task events. */
export interface FamilyEvents {
  readonly scheduled: string;
  readonly started: string;
  readonly succeeded: string;
  readonly failed: string;
  readonly timedOut: string;
}

function familyEvents(family: ResourceKind['family']): FamilyEvents {
  return Object.freeze({
    scheduled: `${family}Scheduled`,
    started: `${family}Started`,
    succeeded: `${family}Succeeded`,
    failed: `${family}Failed`,
    timedOut: `${family}TimedOut`,
  });
}

/** The event types of each family, built once and shared by every event. */
const FAMILY_EVENTS: Readonly<Record<ResourceKind['family'], FamilyEvents>> = Object.freeze({
  LambdaFunction: familyEvents('LambdaFunction'),
  Activity: familyEvents('Activity'),
  Task: familyEvents('Task'),
});

/** What a Task state's definition fixes about its calls, worked out once per state. */
export interface TaskPlan {
  readonly resource: string;
  readonly kind: ResourceKind;
  readonly events: FamilyEvents;
  /** Whether the state sets TimeoutSeconds / HeartbeatSeconds in any form. */
  readonly timeout: boolean;
  readonly heartbeat: boolean;
  /** `states:startExecution` (a child execution). */
  readonly child: boolean;
  /** What a service integration's events name (`resourceType`, `resource`); none for Lambda functions and activities. */
  readonly ids: TaskIds | undefined;
  /** The check AWS makes on the parameters before it schedules the task, if it makes one. */
  readonly checkParameters: ParameterCheck | undefined;
}

/** Resources come from definitions, so a few hundred cover every machine; the cap bounds the rest. */
const MAX_CLASSIFIED = 1024;

/** The task plans of one engine's definitions, and how each resource it met is called. */
export class TaskPlans {
  private readonly kinds = new Map<string, ResourceKind>();
  /** Definitions are parsed once per text, so their state objects are the keys. */
  private readonly plans = new WeakMap<StateDefinition, TaskPlan>();

  /** The plan of a Task state. */
  planOf(state: StateDefinition): TaskPlan {
    let plan = this.plans.get(state);
    if (!plan) {
      const resource = String(state.Resource);
      const kind = this.kindOf(resource);
      plan = {
        resource,
        kind,
        events: FAMILY_EVENTS[kind.family],
        timeout: hasDuration(state, 'TimeoutSeconds'),
        heartbeat: hasDuration(state, 'HeartbeatSeconds'),
        child: kind.resourceType === 'states' && kind.resourceName.startsWith('startExecution'),
        ids:
          kind.family === 'Task'
            ? { resourceType: kind.resourceType, resource: kind.resourceName }
            : undefined,
        checkParameters:
          kind.family === 'Task' ? parameterCheckFor(kind.resourceType, kind.resourceName) : undefined,
      };
      this.plans.set(state, plan);
    }
    return plan;
  }

  private kindOf(resource: string): ResourceKind {
    let kind = this.kinds.get(resource);
    if (!kind) {
      if (this.kinds.size >= MAX_CLASSIFIED) this.kinds.clear();
      kind = classifyResource(resource);
      this.kinds.set(resource, kind);
    }
    return kind;
  }
}

/** How a Task's Resource is called: a Lambda function, an activity, or a service integration and its pattern. */
export function classifyResource(resource: string): ResourceKind {
  if (/^arn:[^:]+:lambda:/.test(resource)) {
    return { family: 'LambdaFunction', resourceType: 'lambda', resourceName: resource, pattern: 'request' };
  }
  if (/^arn:[^:]+:states:[^:]+:[^:]+:activity:/.test(resource)) {
    return { family: 'Activity', resourceType: 'activity', resourceName: resource, pattern: 'request' };
  }
  const service = resource.replace(/^arn:[^:]+:states:::/, '');
  const cut = service.lastIndexOf(':');
  const resourceName = cut < 0 ? service : service.slice(cut + 1);
  let resourceType = cut < 0 ? service : service.slice(0, cut);
  let name = resourceName;
  // `.sync:2` puts a colon inside the action: keep it with the action
  if (/^\d+$/.test(resourceName) && resourceType.endsWith('.sync')) {
    const inner = resourceType.lastIndexOf(':');
    name = `${resourceType.slice(inner + 1)}:${resourceName}`;
    resourceType = resourceType.slice(0, inner);
  }
  const pattern = name.includes('.waitForTaskToken') ? 'token' : name.includes('.sync') ? 'sync' : 'request';
  return { family: 'Task', resourceType, resourceName: name, pattern };
}

const DURATION_PATHS = {
  TimeoutSeconds: 'TimeoutSecondsPath',
  HeartbeatSeconds: 'HeartbeatSecondsPath',
} as const;

/** Whether the state sets TimeoutSeconds / HeartbeatSeconds in any form. */
function hasDuration(state: StateDefinition, field: 'TimeoutSeconds' | 'HeartbeatSeconds'): boolean {
  return state[field] !== undefined || state[DURATION_PATHS[field]] !== undefined;
}
