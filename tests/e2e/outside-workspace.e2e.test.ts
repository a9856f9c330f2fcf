/**
 * A contract that reads outside the workspace (issue 22) used to run without a word: through the
 * real CLI, `plangate run` shows it at the plan gate, marked, before anything runs.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPlan, workDir } from './cli.ts';

const PLAN = `id: reach-out
version: 1
objective: Write a note, checked against the system's users
sizePolicy: { minSteps: 1 }
steps:
  - id: note
    description: Write the note
    tool: shell
    args: { command: echo hi > note.txt }
    contract: { kind: command, command: grep -q root /etc/passwd && test -f note.txt }
    rollback:
      tool: shell
      args: { command: cd .. && ls }
`;

describe('plangate run with a contract that reaches outside the workspace', { timeout: 60_000 }, () => {
  it('marks it at the plan gate', async () => {
    const cwd = await workDir();
    await writeFile(join(cwd, 'plan.yaml'), PLAN);
    const run = runPlan('plan.yaml', cwd, ['--approve']);
    expect(await run.exited, run.stderr).toBe(0);
    const gate = run.stderr.slice(0, run.stderr.indexOf('--approve: answering'));
    expect(gate).toContain(
      '!! reaches outside the workspace: contract: `grep -q root /etc/passwd` uses /etc/passwd, outside the workspace; rollback: `cd ..` uses .., above the workspace',
    );
    expect(gate).not.toContain('!! destructive');
  });
});
