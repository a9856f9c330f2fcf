// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are literal `${...}` strings
/**
 * Values are data (issue 28), through the real CLI: step outputs, an agent's outputs, a value a
 * person reports with `plangate complete --value`, context and an env secret carrying `;`, `$(…)`,
 * backticks, a quote breakout and newlines reach commands, contracts, postconditions and rollbacks
 * as data: no marker file is ever created, the victim directory is never deleted, the forged grep
 * contract fails. TASK_STARTED and ROLLBACK_STARTED record each call as it ran, values filled in,
 * the secret redacted; `plangate events` shows it. A plan that puts a reference where it would be
 * code is refused by `plangate validate`, located.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { defaultStoreDir } from '../../lib/serve/store-directory.ts';
import { CliRun, runPlan, storedEvents, verifyChain, workDir } from './cli.ts';

/** Hostile values, each trying to create a marker file `M…` or delete `victim/`. */
const OUTPUTS = {
  semicolon: 'release-42; touch M1',
  substitution: '$(touch M2)',
  backticks: '`touch M3`',
  breakout: 'x" ; touch M4; echo "',
  wipe: '$(rm -rf victim)',
};
const CONTEXT_VALUE = 'line one\ntouch M5\n$(touch M6) `touch M7`';
const SECRET_VALUE = 's3cret-$(touch M8)"; touch M9; echo "';

function markers(dir: string): string[] {
  return readdirSync(dir).filter((name) => /^M\d*$/.test(name));
}

function outputsCommand(values: Readonly<Record<string, string>>): string {
  // Each line written literally (single quotes, with ' spelled '\'') into the outputs file.
  return Object.entries(values)
    .map(
      ([name, value]) =>
        `printf '%s\\n' '${`${name}=${value}`.replaceAll("'", "'\\''")}' >> "$PLANGATE_OUTPUT"`,
    )
    .join(' && ');
}

const STEP_OUTPUTS_PLAN = `id: values-are-data
version: 1
objective: Carry hostile values from step outputs, context and a secret into commands, contracts and rollbacks
context:
  note: ${JSON.stringify(CONTEXT_VALUE)}
secrets:
  - { name: token, source: env, ref: VALUES_TOKEN }
steps:
  - id: meta
    description: Produce release metadata with hostile values
    tool: shell
    outputs: [semicolon, substitution, backticks, breakout, wipe]
    args: { command: ${JSON.stringify(outputsCommand(OUTPUTS))} }
    contract: { kind: command, command: 'test -d victim' }
  - id: use
    description: Write every value to seen.txt, quoted and as bare words
    dependsOn: [meta]
    tool: shell
    args:
      command: |-
        printf '%s\\n' "\${steps.meta.semicolon}" \${steps.meta.substitution} "\${steps.meta.backticks}" "\${steps.meta.breakout}" > seen.txt
        printf '%s\\n' "\${context.note}" "\${secrets.token}" "\${steps.meta.wipe}" >> seen.txt
    contract:
      kind: command
      command: 'test -n "\${steps.meta.wipe}" && grep -qF -- "\${steps.meta.breakout}" seen.txt && echo "\${context.note}" > /dev/null'
    rollback:
      tool: shell
      args: { command: 'printf "%s|%s|%s\\n" "\${steps.meta.semicolon}" \${steps.meta.wipe} "\${context.note}" > undone.txt' }
      contract: { kind: command, command: 'test -s undone.txt && test -n "\${context.note}"' }
  - id: check
    description: Check seen.txt holds the wipe value as text
    dependsOn: [use]
    tool: shell
    args: { command: 'grep -cF -- "\${steps.meta.wipe}" seen.txt' }
    contract: { kind: command, command: 'test -d victim && test "\${steps.meta.wipe}" != ""' }
postconditions:
  - id: victim-kept
    description: The victim directory is still there and no marker was created
    contract: { kind: command, command: 'test -d victim && ! ls M* 2>/dev/null && test -n "\${steps.meta.backticks}"' }
`;

/** The run's exit code; a run that stops at an escalation instead (a value ran as code) is aborted there. */
async function finished(run: CliRun): Promise<number | null> {
  let ended = false;
  void run.exited.then(() => {
    ended = true;
  });
  await run.until('the run to end', () => ended || run.stderr.includes('skip    skip this step'), 150_000);
  if (!ended) run.answer('abort');
  return run.exited;
}

function ofType(events: readonly JournalRecord[], type: string, step?: string): JournalRecord[] {
  return events.filter((e) => e.event === type && (step === undefined || e.task_id === step));
}

describe('values are data, end to end', { timeout: 180_000 }, () => {
  it('step outputs, context and a secret reach commands, contracts, a postcondition and a rollback as data', async () => {
    const cwd = await workDir();
    mkdirSync(join(cwd, 'victim'));
    writeFileSync(join(cwd, 'victim', 'keep'), 'keep\n');
    const plan = join(cwd, 'plan.yaml');
    writeFileSync(plan, STEP_OUTPUTS_PLAN);
    expect(await new CliRun(['validate', plan], cwd).exited).toBe(0);

    const run = runPlan(plan, cwd, ['--approve', '--rehearse-rollback'], { VALUES_TOKEN: SECRET_VALUE });
    expect(await finished(run), run.stderr).toBe(0);
    expect(markers(cwd)).toEqual([]);
    expect(readFileSync(join(cwd, 'victim', 'keep'), 'utf8')).toBe('keep\n');
    // Every value arrived as exactly the text it is.
    expect(readFileSync(join(cwd, 'seen.txt'), 'utf8')).toBe(
      [
        OUTPUTS.semicolon,
        OUTPUTS.substitution,
        OUTPUTS.backticks,
        OUTPUTS.breakout,
        CONTEXT_VALUE,
        SECRET_VALUE,
        OUTPUTS.wipe,
        '',
      ].join('\n'),
    );
    expect(readFileSync(join(cwd, 'undone.txt'), 'utf8')).toBe(
      `${OUTPUTS.semicolon}|${OUTPUTS.wipe}|${CONTEXT_VALUE}\n`,
    );

    const events = await storedEvents(cwd, run.executionArn);
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    // The record: the call as bash ran it, each value with its variable, the secret redacted.
    const [started] = ofType(events, 'TASK_STARTED', 'use');
    const call = started?.details.call as {
      tool: string;
      values: { ref: string; value: string; env?: string }[];
      ran: { command: string; env: string[] };
    };
    expect(call.tool).toBe('shell');
    expect(call.ran.command).toBe(
      [
        `printf '%s\\n' "\${PLANGATE_VALUE_1}" "\${PLANGATE_VALUE_2}" "\${PLANGATE_VALUE_3}" "\${PLANGATE_VALUE_4}" > seen.txt`,
        `printf '%s\\n' "\${PLANGATE_VALUE_5}" "\${PLANGATE_VALUE_6}" "\${PLANGATE_VALUE_7}" >> seen.txt`,
      ].join('\n'),
    );
    expect(call.ran.env).toEqual(expect.arrayContaining(['PLANGATE_VALUE_1', 'PLANGATE_VALUE_7']));
    expect(call.values).toEqual([
      { ref: '${steps.meta.semicolon}', value: OUTPUTS.semicolon, env: 'PLANGATE_VALUE_1' },
      { ref: '${steps.meta.substitution}', value: OUTPUTS.substitution, env: 'PLANGATE_VALUE_2' },
      { ref: '${steps.meta.backticks}', value: OUTPUTS.backticks, env: 'PLANGATE_VALUE_3' },
      { ref: '${steps.meta.breakout}', value: OUTPUTS.breakout, env: 'PLANGATE_VALUE_4' },
      { ref: '${context.note}', value: CONTEXT_VALUE, env: 'PLANGATE_VALUE_5' },
      { ref: '${secrets.token}', value: '***', env: 'PLANGATE_VALUE_6' },
      { ref: '${steps.meta.wipe}', value: OUTPUTS.wipe, env: 'PLANGATE_VALUE_7' },
    ]);
    expect(JSON.stringify(events)).not.toContain('s3cret');
    // The contract's evidence: the command that ran and its values.
    const completed = ofType(events, 'TASK_COMPLETED', 'use')[0]?.details.evidence as {
      ran: string;
      values: { ref: string }[];
    };
    expect(completed.ran).toContain('test -n "${PLANGATE_VALUE_1}"');
    expect(completed.values.map((v) => v.ref)).toEqual([
      '${steps.meta.wipe}',
      '${steps.meta.breakout}',
      '${context.note}',
    ]);
    // The rollback's call, as ROLLBACK_STARTED keeps it.
    const rollback = ofType(events, 'ROLLBACK_STARTED', 'use')[0]?.details.call as {
      ran: { command: string };
    };
    expect(rollback.ran.command).toBe(
      'printf "%s|%s|%s\\n" "${PLANGATE_VALUE_1}" "${PLANGATE_VALUE_2}" "${PLANGATE_VALUE_3}" > undone.txt',
    );

    // `plangate events` shows the call, as text and as JSON.
    const text = new CliRun(['events', run.executionArn, '--store', defaultStoreDir(cwd)], cwd);
    expect(await text.exited).toBe(0);
    expect(text.stdout).toContain('ran: printf');
    expect(text.stdout).toContain('${steps.meta.semicolon} = ');
    expect(text.stdout).not.toContain('s3cret');
    const json = new CliRun(['events', run.executionArn, '--json', '--store', defaultStoreDir(cwd)], cwd);
    expect(await json.exited).toBe(0);
    expect(json.stdout).toContain('"call":{"tool":"shell"');
  });

  it("an agent's forged outputs do not pass its grep contract, nor run anything", async () => {
    const cwd = await workDir();
    const agent = join(cwd, 'agent.sh');
    writeFileSync(
      agent,
      `#!/usr/bin/env bash\ncat > /dev/null\nprintf '%s\\n' 'commit=x" /dev/null || true; echo "' 'note=$(touch M1)\`touch M2\`' >> "$PLANGATE_OUTPUT"\n`,
    );
    chmodSync(agent, 0o755);
    const plan = join(cwd, 'plan.yaml');
    writeFileSync(
      plan,
      `id: forged-cite
version: 1
objective: Have an agent cite the commit of the release in CHANGELOG.md
steps:
  - id: prepare
    description: Prepare the workspace for the citation
    tool: shell
    args: { command: 'mkdir -p notes' }
    contract: { kind: command, command: 'test -d notes' }
  - id: cite
    description: Cite the release commit in CHANGELOG.md
    dependsOn: [prepare]
    target: writer
    task: Add the release commit to CHANGELOG.md and report it as commit, with a note.
    outputs: [commit, note]
    onFail: { retries: 0, escalation: ask }
    contract: { kind: command, command: 'test -n "\${steps.cite.note}" && grep -q "\${steps.cite.commit}" CHANGELOG.md' }
  - id: publish
    description: Publish the note
    dependsOn: [cite]
    tool: shell
    args: { command: 'printf "%s" "\${steps.cite.note}" > notes/published.txt' }
    contract: { kind: command, command: 'test -s notes/published.txt' }
`,
    );
    const run = runPlan(plan, cwd, ['--approve', '--files-dir', cwd], { PLANGATE_AGENT_COMMAND: agent });
    await run.until('escalation prompt', () => run.stderr.includes('skip    skip this step'));
    run.answer('abort');
    expect(await run.exited).toBe(1);
    expect(existsSync(join(cwd, 'CHANGELOG.md'))).toBe(false);
    expect(markers(cwd)).toEqual([]);
    const events = await storedEvents(cwd, run.executionArn);
    expect(ofType(events, 'TASK_COMPLETED', 'cite')).toEqual([]);
    const failed = ofType(events, 'TASK_FAILED', 'cite')[0]?.details.evidence as {
      ran: string;
      passed: boolean;
      values: { ref: string; value: string }[];
    };
    expect(failed.passed).toBe(false);
    expect(failed.ran).toBe('test -n "${PLANGATE_VALUE_1}" && grep -q "${PLANGATE_VALUE_2}" CHANGELOG.md');
    expect(failed.values).toContainEqual({
      ref: '${steps.cite.commit}',
      value: 'x" /dev/null || true; echo "',
      env: 'PLANGATE_VALUE_2',
    });
    // The agent's TASK_STARTED records its call too.
    expect(ofType(events, 'TASK_STARTED', 'cite')[0]?.details.call).toMatchObject({ tool: 'agent' });
  });

  it('a value a person reports with plangate complete --value reaches the next command as data', async () => {
    const cwd = await workDir();
    mkdirSync(join(cwd, 'victim'));
    const plan = join(cwd, 'plan.yaml');
    writeFileSync(
      plan,
      `id: human-value
version: 1
objective: Write the version a person reports to version.txt
sizePolicy: { minSteps: 2 }
steps:
  - id: pick
    description: Pick the release version
    task: Choose the release version and report it as version.
    requiresHuman: true
    outputs: [version]
    contract: { kind: assert, expression: '$exists(output.version)' }
  - id: write
    description: Write the picked version to version.txt
    dependsOn: [pick]
    tool: shell
    args: { command: 'printf "%s" "\${steps.pick.version}" > version.txt' }
    contract: { kind: command, command: 'test "$(cat version.txt)" = "\${steps.pick.version}"' }
`,
    );
    const value = '1.0; touch M1\n$(rm -rf victim)`touch M2`"; touch M3; echo "';
    const run = runPlan(plan, cwd, ['--approve']);
    await run.until('the human prompt', () => run.stderr.includes('done [name=value …]'));
    const complete = new CliRun(['complete', run.executionArn, 'pick', '--value', `version=${value}`], cwd);
    expect(await complete.exited, complete.stderr).toBe(0);
    expect(await finished(run), run.stderr).toBe(0);
    expect(readFileSync(join(cwd, 'version.txt'), 'utf8')).toBe(value);
    expect(markers(cwd)).toEqual([]);
    expect(existsSync(join(cwd, 'victim'))).toBe(true);
  });

  it('plangate validate refuses a reference where it would be code, located, and says how to write it', async () => {
    const cwd = await workDir();
    const plan = join(cwd, 'plan.yaml');
    writeFileSync(
      plan,
      `id: unsafe-references
version: 1
objective: Use values where the shell would read them as code
steps:
  - id: meta
    description: Produce a tag
    tool: shell
    outputs: [tag]
    args: { command: 'echo tag=1 >> "$PLANGATE_OUTPUT"' }
    contract: { kind: command, command: "test '\${steps.meta.tag}' = 1" }
  - id: use
    description: Use the tag
    dependsOn: [meta]
    tool: shell
    args:
      command: |-
        echo ok
        bash -c "echo \${steps.meta.tag}"
      env: { BASH_ENV: ./x.sh }
    contract: { kind: command, command: 'test -f x' }
    rollback:
      tool: shell
      args: { command: 'eval "rm \${steps.meta.tag}"' }
  - id: last
    description: Finish
    dependsOn: [use]
    tool: shell
    args: { command: '\${steps.meta.tag} --version' }
    contract: { kind: command, command: 'true' }
`,
    );
    const validate = new CliRun(['validate', plan], cwd);
    expect(await validate.exited).toBe(1);
    const out = validate.stdout + validate.stderr;
    // Each problem at the command's place in the file, and inside the command.
    expect(out).toMatch(
      /plan\.yaml:\d+:\d+ error unsafe-reference \$\{steps\.meta\.tag\} is inside single quotes.*put it in double quotes.*\(at 1:7 of the command\)/,
    );
    expect(out).toMatch(
      /\$\{steps\.meta\.tag\} is in text that `bash -c` runs as code; pass it through `env:`.*\(at 2:15 of the command\)/,
    );
    expect(out).toMatch(/BASH_ENV makes bash/);
    expect(out).toMatch(/\$\{steps\.meta\.tag\} is in text that `eval` runs as code/);
    expect(out).toMatch(/\$\{steps\.meta\.tag\} is in command-name position.*\(at 1:1 of the command\)/);
  });
});
