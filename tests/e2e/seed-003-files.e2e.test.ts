/**
 * Seed 003's execution files as the agents and the person saw them (issue 22), through the real
 * CLI: `plangate run --no-workers` of a plan with a coder step (its first attempt lazy), a human
 * step and another coder step, a `plangate worker` running a scripted coder, and `plangate
 * complete` for the person. Each task's handoff.md is byte for byte the handoff its agent read;
 * every file has every section of the seed's templates; result.md takes the files modified from
 * the workspace and the blockers and deviations from the agent's report; execution.log records
 * each command and its output, redacted; the waiting human step is awaiting_human_action and its
 * handoff says how to report with `plangate complete`.
 */
import { readFileSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliRun, verifyChain } from './cli.ts';
import { buggyWorkspace, filesUnder, regeneratedFiles, WORKER_FIXTURES } from './worker-setup.ts';

const AGENT = join(WORKER_FIXTURES, 'seed-003-agent.sh');

/**
 * Seed 003's templates, section by section, as the seed words them: what a handoff, a result, a
 * log entry and the state file must communicate (and the result's validation table).
 */
const SEED_003 = {
  handoff: [
    'Task identity',
    'What to accomplish',
    'Context from prior tasks',
    'Required outputs',
    'Resource constraints',
    'Fallback behaviors',
  ],
  result: [
    'Captured values',
    'Summary',
    'Files modified',
    'Validation',
    'Errors',
    'Blockers',
    'Deviations from plan',
  ],
  validationHeader: '| Criterion | Result | Evidence |',
  statusValues: ['pending', 'in_progress', 'completed', 'failed', 'blocked'],
  state: ['# Execution State', '**Plan:**', '**Started:**', '**Updated:**'],
  stateColumns: ['Task', 'Status', 'Updated'],
} as const;

/** The `## ` headings of a markdown file, in order. */
const headings = (text: string): string[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('## '))
    .map((line) => line.slice(3));

/** Whether `wanted` appear in `list` in this order (others may come between). */
function inOrder(list: readonly string[], wanted: readonly string[]): boolean {
  let at = 0;
  for (const item of list) if (item === wanted[at]) at++;
  return at === wanted.length;
}

describe("seed 003's files, as the agents and the person saw them", { timeout: 120_000 }, () => {
  it('writes every section of the templates, handoffs byte for byte as read, results from the workspace and the report', async () => {
    const { tmp, repo, log } = await buggyWorkspace();
    const plan = join(tmp, 'seed-003.yaml');
    await copyFile(join(WORKER_FIXTURES, 'seed-003.yaml'), plan);
    const store = join(tmp, 'store');
    const common = ['--store', store, '--files-dir', tmp];
    const run = new CliRun(['run', plan, '--json', '--approve', '--no-workers', ...common], repo);
    const worker = new CliRun(
      ['worker', '--target', 'coder', '--workspace', repo, '--store', store, '--agent-command', AGENT],
      repo,
      { AGENT_LOG: log },
    );
    const dir = join(tmp, 'release-note-execution');
    const file = (path: string) => readFileSync(join(dir, path), 'utf8');
    try {
      // The person's step waits for them, says so, and says how to report.
      await run.untilEvent('TASK_STARTED', 'pick-version');
      await run.until('the state file says so', () =>
        /\| 02 \| pick-version \| blocked \| [^|]+ \| awaiting_human_action \|/.test(
          file('execution-state.md'),
        ),
      );
      const arn = run.executionArn;
      const human = file('tasks/02/handoff.md');
      expect(human).toContain(`\`plangate complete ${arn} pick-version --value version=<value>\``);
      expect(human).toContain(`\`plangate complete ${arn} pick-version --failed "<why>"\``);
      expect(human).toContain('Choose the next version (major.minor.patch) for the 1 changes in CHANGES.md');
      expect(human).toContain('| Done by | a person (requiresHuman) |');
      const complete = new CliRun(
        ['complete', arn, 'pick-version', '--value', 'version=1.2.0', '--store', store],
        repo,
      );
      expect(await complete.exited, complete.stderr).toBe(0);
      expect(await run.exited, run.stderr).toBe(0);
    } finally {
      worker.terminate();
    }
    await worker.exited;
    expect(verifyChain(run.events)).toEqual({ ok: true, count: run.events.length });

    const written = filesUnder(dir);
    // The files are the events' projection: `plangate files` regenerates the same bytes.
    const fresh = join(tmp, 'regenerated');
    await mkdir(fresh);
    expect(await regeneratedFiles(run.executionArn, store, fresh, 'release-note')).toEqual(written);

    // Each agent's handoff.md is what it read, byte for byte (the last attempt's).
    const read = (name: string) => readFileSync(join(log, name), 'utf8');
    expect(written.get('tasks/01/handoff.md')).toBe(read('summarize-2.handoff.md'));
    expect(written.get('tasks/03/handoff.md')).toBe(read('write-note-1.handoff.md'));

    // Section by section, the seed's templates.
    for (const n of ['01', '02', '03']) {
      const handoff = written.get(`tasks/${n}/handoff.md`) ?? '';
      expect(
        inOrder(headings(handoff), SEED_003.handoff),
        `tasks/${n}/handoff.md: ${headings(handoff)}`,
      ).toBe(true);
      const result = written.get(`tasks/${n}/result.md`) ?? '';
      expect(result).toMatch(/^\*\*Status:\*\* completed$/m);
      expect(inOrder(headings(result), SEED_003.result), `tasks/${n}/result.md: ${headings(result)}`).toBe(
        true,
      );
      expect(result).toContain(SEED_003.validationHeader);
      const entries = (written.get(`tasks/${n}/execution.log`) ?? '')
        .split('\n')
        .filter((l) => !l.startsWith('    '));
      for (const entry of entries.filter(Boolean))
        expect(entry).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z [A-Z_]+: /);
    }
    const state = written.get('execution-state.md') ?? '';
    for (const line of SEED_003.state) expect(state).toContain(line);
    const header = state.split('\n').find((l) => l.startsWith('| Task')) ?? '';
    for (const column of SEED_003.stateColumns) expect(header).toContain(` ${column} `);
    for (const row of state.split('\n').filter((l) => /^\| \d\d /.test(l)))
      expect(SEED_003.statusValues).toContain(row.split('|')[3]?.trim());

    // The retried handoff: why the last attempt failed, the fallbacks, the constraints.
    const summarize = written.get('tasks/01/handoff.md') ?? '';
    expect(summarize).toContain('| Attempt | 2 |');
    expect(summarize).toContain('## Earlier attempts');
    expect(summarize).toContain('Contract `test -s CHANGES.md`');
    expect(summarize).toContain(
      "- If the contract fails: the step is tried again up to 1 more time(s), each new attempt's handoff saying why the last failed; then a person decides (retry, skip or abort).",
    );
    expect(summarize).toContain(
      '- Run at most 20 commands; when near the limit, conclude with the data you have.',
    );
    expect(summarize).toContain('- `count` (append `count=<value>` to $PLANGATE_OUTPUT)');
    const note = written.get('tasks/03/handoff.md') ?? '';
    expect(note).toContain('| `version` | `pick-version` | 1.2.0 |');
    expect(note).toContain(
      "- If the run is aborted later, this step's work is undone by its rollback (`shell`).",
    );

    // result.md: files from the workspace (git), summary, deviations and blockers from the report.
    const summarized = written.get('tasks/01/result.md') ?? '';
    expect(section(summarized, 'Files modified')).toEqual(['- CHANGES.md', '- src/auth/handler.py']);
    expect(section(summarized, 'Summary')[0]).toBe('listed 1 change from the git log');
    expect(section(summarized, 'Deviations from plan')).toEqual([
      '- there is no tag, so the changes since the first commit are listed (reported by the agent, attempt 2)',
    ]);
    expect(section(summarized, 'Blockers')).toEqual(['None.']);
    expect(section(written.get('tasks/03/result.md') ?? '', 'Blockers')).toEqual([
      '- the release date is not known; RELEASE.md has none (reported by the agent)',
    ]);
    expect(section(written.get('tasks/03/result.md') ?? '', 'Files modified')).toEqual(['- RELEASE.md']);

    // execution.log: each command and its output, the agent's own log included; no secret.
    const summaryLog = written.get('tasks/01/execution.log') ?? '';
    expect(summaryLog).toContain(`    $ ${AGENT}   (the agent: exit 0 after `);
    expect(summaryLog).toContain('    | $ git log --oneline');
    expect(summaryLog).toMatch(/ {4}\| [0-9a-f]{7} The login handler/);
    expect(summaryLog).toContain('    $ test -s CHANGES.md   (the contract: exit 0');
    for (const [path, text] of written) expect(text, path).not.toContain('ghp_abcdefghijklmnopqrstuvwxyz');
    expect(summaryLog).toContain('working with ***');
  });
});

/** The non-empty lines of a `## ` section. */
function section(text: string, name: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(`## ${name}`);
  if (start === -1) return [];
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  return lines.slice(start + 1, end === -1 ? undefined : end).filter((line) => line.trim() !== '');
}
