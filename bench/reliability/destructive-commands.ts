/**
 * The destructive-command corpus (shell-corpus.ts) through the front door: every command in each
 * place a plan holds one (a step's args, its contract, its rollback, the rollback's contract, a
 * postcondition), one plan per
 * place with a step (or postcondition) per command, validated by the real CLI (`plangate validate
 * --json`, a child process) and marked by planRisks (what the gate shows). A destructive command is
 * found when it is marked and, outside a rollback, refused with a located problem at its place;
 * an ordinary command must be neither marked nor refused anywhere.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Problem } from '../../lib/plan/problems.ts';
import { type PlanRisks, planRisks } from '../../lib/plan/risks.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { analyzeShell } from '../../lib/plan/shell/analyze.ts';
import { PLANGATE_NODE_ARGS } from '../../tests/support/plangate-cli.ts';
import { DESTRUCTIVE_COMMANDS, HARMLESS_COMMANDS } from './shell-corpus.ts';

/** The ordinary commands that leave a process behind: refused by design, reported apart. */
const OUTLIVING = HARMLESS_COMMANDS.filter((c) => analyzeShell(c).background.length > 0);
const HARMLESS = HARMLESS_COMMANDS.filter((c) => !OUTLIVING.includes(c));

const run = promisify(execFile);

export const COMMAND_PLACES = ['step', 'contract', 'rollback', 'rollbackContract', 'postcondition'] as const;
type Place = (typeof COMMAND_PLACES)[number];

export interface PlaceFigures {
  /** Commands the gate marks as destructive here. */
  readonly marked: number;
  /** Commands the validator refuses here, with a located problem at their place. */
  readonly refused: number;
}

export interface CorpusResult {
  readonly destructive: {
    readonly commands: number;
    /** Marked in every place and refused everywhere but in a rollback. */
    readonly found: number;
    readonly byPlace: Record<Place, PlaceFigures>;
    /** `place: command` for each miss. */
    readonly missed: string[];
  };
  readonly harmless: {
    readonly commands: number;
    readonly byPlace: Record<Place, PlaceFigures>;
    /** `place: command` for each ordinary command marked or refused. */
    readonly flagged: string[];
    /**
     * Ordinary commands that leave a process running after them (`nohup … &`): refused everywhere
     * by design (validation's `background-process`: nothing may outlive its command), so not
     * counted as flagged.
     */
    readonly outliveTheirCommand: string[];
  };
}

/** Steps the corpus's plan references point at; each command's step depends on them. */
const PROVIDERS = [
  ['plan', 'tool'],
  ['build', 'artifact'],
  ['pick-version', 'version'],
] as const;

/** One plan holding every command at `place`: command k in step k (after the providers) or postcondition k. */
function planDocument(commands: readonly string[], place: Place): Record<string, unknown> {
  const providers = PROVIDERS.map(([id, output]) => ({
    id,
    description: `Produce ${output}`,
    tool: 'echo',
    args: { message: id },
    outputs: [output],
    contract: { kind: 'assert', expression: 'true' },
  }));
  const holders = commands.map((command, k) => ({
    id: `c${k}`,
    description: `Hold command ${k}`,
    dependsOn: PROVIDERS.map(([id]) => id),
    tool: 'shell',
    args: { command: place === 'step' ? command : 'echo ok' },
    contract: { kind: 'command', command: place === 'contract' ? command : 'test -f out.txt' },
    ...(place === 'rollback' ? { rollback: { tool: 'shell', args: { command } } } : {}),
    ...(place === 'rollbackContract'
      ? {
          rollback: { tool: 'shell', args: { command: 'echo undo' }, contract: { kind: 'command', command } },
        }
      : {}),
  }));
  const postconditions =
    place === 'postcondition'
      ? commands.map((command, k) => ({
          id: `p${k}`,
          description: `Check ${k}`,
          contract: { kind: 'command', command },
        }))
      : [];
  return {
    id: `corpus-${place}`,
    objective: `Every corpus command as a ${place}`,
    context: { workDir: '/tmp/corpus' },
    sizePolicy: { maxSteps: commands.length + PROVIDERS.length },
    steps: [...providers, ...holders],
    postconditions,
  };
}

/** Where command k's problem must be, per place (step indices count the providers). */
function expectedPointers(place: Place, k: number): string[] {
  const step = `/steps/${k + PROVIDERS.length}`;
  switch (place) {
    case 'step':
      return [`${step}/requiresApproval`, `${step}/args/command`];
    case 'contract':
      return [`${step}/contract/command`];
    case 'rollback':
      return [`${step}/rollback/args/command`];
    case 'rollbackContract':
      return [`${step}/rollback/contract/command`];
    case 'postcondition':
      return [`/postconditions/${k}/contract/command`];
  }
}

function marksOf(risks: PlanRisks, place: Place, k: number): readonly string[] {
  if (place === 'postcondition') return risks.postconditions[`p${k}`] ?? [];
  const step = risks.steps[`c${k}`];
  if (!step) return [];
  const byPlace = { step: step.destructive, contract: step.contract, rollback: step.rollback };
  return place === 'rollbackContract' ? step.rollbackContract : byPlace[place];
}

async function validateWithCli(
  _repo: string,
  dir: string,
  document: Record<string, unknown>,
): Promise<Problem[]> {
  const file = join(dir, `${String(document.id)}.json`);
  await writeFile(file, JSON.stringify(document, null, 2));
  const argv = [...PLANGATE_NODE_ARGS, 'validate', '--json', file];
  const output = await run(process.execPath, argv, {
    cwd: dir,
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  return (JSON.parse(output.stdout) as { problems: Problem[] }).problems;
}

/** Figures per place for `commands`: marked, and refused with a located problem at the command's place. */
async function throughFrontDoor(
  repo: string,
  dir: string,
  commands: readonly string[],
  place: Place,
): Promise<Array<{ marked: boolean; refused: boolean }>> {
  const document = planDocument(commands, place);
  const problems = await validateWithCli(repo, dir, document);
  const risks = planRisks(PlanSchema.parse(document));
  return commands.map((_, k) => {
    const pointers = expectedPointers(place, k);
    const refused = problems.some(
      (p) =>
        p.severity === 'error' &&
        p.location.line !== undefined &&
        pointers.includes(p.location.pointer ?? ''),
    );
    return { marked: marksOf(risks, place, k).length > 0, refused };
  });
}

export async function destructiveCommandCorpus(repo: string): Promise<CorpusResult> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-corpus-'));
  try {
    const destructive = DESTRUCTIVE_COMMANDS.map((s) => s.command);
    const destructiveByPlace = {} as Record<Place, PlaceFigures>;
    const harmlessByPlace = {} as Record<Place, PlaceFigures>;
    const missed: string[] = [];
    const flagged: string[] = [];
    const foundEverywhere = destructive.map(() => true);
    for (const place of COMMAND_PLACES) {
      const results = await throughFrontDoor(repo, dir, destructive, place);
      results.forEach(({ marked, refused }, k) => {
        // A rollback undoes things: it is marked at the gate, not refused.
        const found = marked && (place === 'rollback' || refused);
        if (!found) {
          foundEverywhere[k] = false;
          missed.push(`${place}: ${destructive[k]}`);
        }
      });
      destructiveByPlace[place] = {
        marked: results.filter((r) => r.marked).length,
        refused: results.filter((r) => r.refused).length,
      };
      const ordinary = await throughFrontDoor(repo, dir, HARMLESS, place);
      ordinary.forEach(({ marked, refused }, k) => {
        if (marked || refused) flagged.push(`${place}: ${HARMLESS[k]}`);
      });
      harmlessByPlace[place] = {
        marked: ordinary.filter((r) => r.marked).length,
        refused: ordinary.filter((r) => r.refused).length,
      };
    }
    return {
      destructive: {
        commands: destructive.length,
        found: foundEverywhere.filter(Boolean).length,
        byPlace: destructiveByPlace,
        missed,
      },
      harmless: {
        commands: HARMLESS.length,
        byPlace: harmlessByPlace,
        flagged,
        outliveTheirCommand: OUTLIVING,
      },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
