/**
 * A secret planted in args, tool output, contract stderr, an agent's output (inherited from the
 * environment, never referenced by the step) and a tool's error message never reaches the CLI's
 * output, the journal, the tables, the engine's histories or any file of the run
 * (bench/reliability/planted-secrets.ts, also part of `npm run reliability`).
 */
import { expect, it } from 'vitest';
import { plantedSecrets } from '../../bench/reliability/planted-secrets.ts';
import { REPO } from './cli.ts';

it('finds the planted secret nowhere a person or an auditor can read', async () => {
  const result = await plantedSecrets(REPO);
  expect(result.runExitCode).toBe(0);
  expect(Object.keys(result.searched)).toEqual(
    expect.arrayContaining(['CLI stdout', 'table events', 'file store/eventbus/events.jsonl']),
  );
  expect(
    Object.keys(result.searched).some((where) => where.startsWith('file store/engine/executions/')),
  ).toBe(true);
  expect(result.found).toEqual([]);
}, 120_000);
