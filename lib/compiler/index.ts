/** lib/compiler's public API: plan → Step Functions definitions (ASL, JSONata) + report. */
export type { AslDefinition, AslState, CompiledDefinition, ResourceReference } from './asl.ts';
export {
  CompileError,
  type CompileOptions,
  type CompileResult,
  compilePlan,
  EXECUTE_STATE,
} from './compile.ts';
export {
  type Deployability,
  type DeployabilityOptions,
  deployability,
  validationProblems,
} from './deployability.ts';
export {
  agentActivityName,
  agentActivityPlaceholder,
  childPlaceholder,
  PLACEHOLDERS,
} from './placeholders.ts';
export { STEP_FUNCTIONS_QUOTAS } from './quotas.ts';
export type { CompileReport, MachineReport, StepReport } from './report.ts';
export { criticalPath, type SimulationResult, simulate } from './simulate.ts';
export { runsOnWorker } from './step-task.ts';
export { type Decomposition, decompose, type Structure } from './structure.ts';
