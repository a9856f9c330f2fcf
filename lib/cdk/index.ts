/** lib/cdk's public API: the platform, plans as state machines, and the app builder. */

export {
  HARNESS_HANDLERS,
  type HarnessHandlerName,
  type HarnessHandlerSpec,
  STATE_MACHINE_HANDLERS,
  type StateMachineHandlerName,
} from '../runtime/catalog.ts';
export { APP_CONTEXT, APP_UNNOTIFIED_REASON, buildPlangateApp } from './app.ts';
export { ApproverPool } from './approver-pool.ts';
export { PlanEventBus, type PlanEventBusProps } from './event-bus.ts';
export { EVENT_MUTATING_ACTIONS, EventsTable, type EventsTableProps } from './events-table.ts';
export { loadExamplePlans } from './examples.ts';
export { type CommonEnvInput, HarnessFunction, type HarnessFunctionProps } from './harness-function.ts';
export { HarnessTable, type HarnessTableProps, type ItemAccess } from './harness-table.ts';
export { InvalidPlanError } from './plan-check.ts';
export { PlanHttpApi, type PlanHttpApiProps } from './plan-http-api.ts';
export { PlanPlatform, type PlanPlatformProps } from './plan-platform.ts';
export { PlanPlatformStack, type PlanPlatformStackProps, planOutputName } from './plan-platform-stack.ts';
export { PlanStateMachine, type PlanStateMachineProps } from './plan-state-machine.ts';
export { GATE_NOTICE_UNDELIVERED, PlatformAlarms, type PlatformAlarmsProps } from './platform-alarms.ts';
export { trustedService } from './service-trust.ts';
