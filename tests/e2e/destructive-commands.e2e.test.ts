/**
 * Issue 19's destructive commands through the real CLI (`plangate validate`, a child process):
 * `rm -rf` in a contract and a postcondition, a quoted `"rm"` as a step's command, and a
 * "Create the directory" step that also runs `find … -delete`. Each is refused with a located
 * problem, while a destructive rollback (rollbacks undo things) is not refused.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliRun, workDir } from './cli.ts';

async function validate(yaml: string): Promise<{ code: number | null; stdout: string }> {
  const cwd = await workDir();
  await writeFile(join(cwd, 'plan.yaml'), yaml);
  const run = new CliRun(['validate', 'plan.yaml'], cwd);
  const code = await run.exited;
  return { code, stdout: run.stdout };
}

const STEPS_BEFORE = `id: scratch
objective: Make a scratch directory, write into it, check it
steps:
  - id: make
    description: Create the directory tmpdir
    tool: shell
    args: {command: mkdir -p tmpdir}
    contract: {kind: command, command: test -d tmpdir}
  - id: write
    description: Write a note into tmpdir
    dependsOn: [make]
    tool: shell
    args: {command: echo note > tmpdir/note.txt}
    contract: {kind: command, command: test -f tmpdir/note.txt}
`;

describe('plangate validate refuses destructive commands where the approver would not look', () => {
  it('rm -rf in a contract and a postcondition; a destructive rollback passes', async () => {
    const { code, stdout } =
      await validate(`${STEPS_BEFORE}    rollback: {tool: shell, args: {command: rm -rf tmpdir}}
  - id: check
    description: Check the note
    dependsOn: [write]
    tool: shell
    args: {command: cat tmpdir/note.txt}
    contract: {kind: command, command: grep -q note tmpdir/note.txt && rm -rf tmpdir}
postconditions:
  - id: clean
    description: Nothing is left behind
    contract: {kind: command, command: rm -rf tmpdir ../other && test ! -e tmpdir}
`);
    expect(code).toBe(1);
    expect(stdout).toContain(
      'plan.yaml:21:31 error destructive-contract a contract only checks; it must not change anything: `rm -rf tmpdir` deletes recursively (at 1:33 of the command) [/steps/2/contract/command]',
    );
    expect(stdout).toContain(
      'plan.yaml:25:31 error destructive-contract a postcondition only checks; it must not change anything: `rm -rf tmpdir ../other` deletes recursively (at 1:1 of the command) [/postconditions/0/contract/command]',
    );
    expect(stdout).not.toContain('/rollback');
  });

  it('"rm" -rf as a step command without requiresApproval', async () => {
    const { code, stdout } = await validate(`${STEPS_BEFORE}  - id: cleanup
    description: Remove the scratch directory tmpdir recursively
    dependsOn: [write]
    tool: shell
    args: {command: '"rm" -rf ./tmpdir'}
    contract: {kind: command, command: test ! -e tmpdir}
`);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /plan\.yaml:\d+:\d+ error destructive-without-approval step "cleanup" makes a destructive shell call \(`"rm" -rf \.\/tmpdir` deletes recursively\); set requiresApproval: true so it gets its own gate \[\/steps\/2\/requiresApproval\]/,
    );
  });

  it('find … -delete in a step described as creating a directory', async () => {
    const { code, stdout } = await validate(`id: scratch
objective: Make a scratch directory
steps:
  - id: make
    description: Create the directory tmpdir
    tool: shell
    args: {command: mkdir -p tmpdir && find . -mindepth 1 -maxdepth 1 ! -name tmpdir -delete}
    contract: {kind: command, command: test -d tmpdir}
  - id: write
    description: Write a note into tmpdir
    dependsOn: [make]
    tool: shell
    args: {command: echo note > tmpdir/note.txt}
    contract: {kind: command, command: test -f tmpdir/note.txt}
  - id: read
    description: Read the note
    dependsOn: [write]
    tool: shell
    args: {command: cat tmpdir/note.txt}
    contract: {kind: command, command: grep -q note tmpdir/note.txt}
`);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /plan\.yaml:4:5 error destructive-without-approval step "make" makes a destructive shell call \(`find \. -mindepth 1 -maxdepth 1 ! -name tmpdir -delete` deletes the files it finds \(-delete\)\); set requiresApproval: true/,
    );
  });
});
