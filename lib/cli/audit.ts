/**
 * `plangate audit query|export|verify`: the auditor's view of the events table, on the local store
 * (default) or on AWS (`--aws --table NAME`), through the same code (lib/audit).
 */
import { parseArgs } from 'node:util';
import {
  type AnchorSource,
  awsAnchorSource,
  localAnchorSource,
  verifyAnchors,
} from '../audit/anchor-source.ts';
import type { AnchorCheck } from '../audit/anchors.ts';
import { checkExport, EXPORT_FORMATS, type ExportFormat, exportEvents } from '../audit/export.ts';
import { type AuditFilter, AuditFilterSchema, accessPlan } from '../audit/filter.ts';
import { auditEvents } from '../audit/query.ts';
import { AuditTargetError, type AuditTargetSpec, awsRegion, openAuditTarget } from '../audit/target.ts';
import {
  checkExecution,
  type ExecutionVerdict,
  listExecutionIds,
  verifyExecutions,
} from '../audit/verify.ts';
import { characterLabel, visibleText } from '../plan/visible-text.ts';
import { PolicyLoadError, PolicySet } from '../policy/policy-set.ts';
import { formatSeq } from '../runtime/journal/journal.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { auditReadRequest, readRefusal, storeReadPolicy } from '../serve/read-policy.ts';
import { DEFAULT_STORE_DESCRIPTION, defaultStoreDir, storePaths } from '../serve/store-directory.ts';

const TARGET_HELP = `Where (default: the local store):
  --store DIR          the local store (default: ${DEFAULT_STORE_DESCRIPTION}); read without starting the engine
  --aws                read the events table on AWS (the SDK's usual credential chain)
  --table NAME         the events table's name (with --aws)
  --region REGION      the AWS region (with --aws; default AWS_REGION, else AWS_DEFAULT_REGION)`;

const FILTER_HELP = `Filters (combine freely; every one given must match):
  --execution ARN      one execution's events, in sequence order  (Query on the table key)
  --task PLAN#TASK     one step's history across executions        (Query on index byTask)
  --approver WHO       every vote of one person, and every decision naming them
                       (Query on index byApprover, and decisions made with others:
                       GATE_APPROVED on index byEventType, filtered on details.approvers)
  --plan ID            every event of a plan                       (Query on index byPlan)
  --type EVENT         every event of one type, e.g. GATE_APPROVED (Query on index byEventType)
  --since ISO          events at or after this time (UTC when no zone is given)
  --until ISO          events at or before this time
The most selective of execution > task > approver > plan > type picks the key or index
(a Query); the others are filtered on the server. On an index the time range is a condition
on its sort key (timestamp); on the table, whose sort key is the sequence number, it is a
filter. Only with none of the five given is the table scanned (a Scan, unordered).`;

const QUERY_USAGE = `Usage: plangate audit query [filters] [--limit N] [--json] [where]

Prints the matching events as a table (or JSON lines with --json); how the table was read
goes to stderr. Exit 0 (also when nothing matches), 1 the store/table cannot be read, 2 usage.

${FILTER_HELP}

Options:
  --limit N            stop after N events
  --json               one stored record per line (JSON)

${TARGET_HELP}`;

const EXPORT_USAGE = `Usage: plangate audit export [filters] --out FILE [--format jsonl|csv] [where]

Streams every matching event to FILE (written to FILE.partial, renamed when complete), then
one manifest trailer line: {"manifest":{format,count,sha256,...}} for jsonl, or a CSV row
"#manifest,<json>". sha256 is the hex SHA-256 of every byte before the trailer. CSV is
RFC 4180; cells a spreadsheet would run as a formula (= + - @ tab CR) and cells starting
with ' get a leading ' (strip one leading ' to get the value back). Check an export with
\`plangate audit verify --export FILE\`. Exit 0 ok, 1 failed, 2 usage.

${FILTER_HELP}

Options:
  --out FILE           where to write (required)
  --format F           jsonl (default) or csv

${TARGET_HELP}`;

const VERIFY_USAGE = `Usage: plangate audit verify (--execution ARN ... | --all | --export FILE) [--json] [where]

Verifies each execution's hash chain and reports every problem with its execution and sequence
number: gap (deleted events), edited (content vs hash), reordered (links to another stored
event), foreign (a copy of another execution's event, or another plan's), broken-link,
key-mismatch (key vs recorded seq), index-mismatch (planTask/approver attributes vs the record),
malformed. Deleting the newest events leaves an intact shorter chain: compare the printed head
hash with one kept earlier. Then that what ran is what was approved: approved-definition (each
plan-gate approval binds the definition PLAN_CREATED pinned), integrity-mismatch (an
INTEGRITY_MISMATCH the execution did not end after), engine-definition (the definition the
engine holds now hashes to the pinned one; when the store's engine or Step Functions is
reachable), approved-calls (each TASK_STARTED's call is its step as approved, with its recorded
values filled in). Then checks the chain against its signed anchors (the store's digest log, signed with
a key kept outside the store; see docs/audit.md): diverged (the stored hash at an anchored seq is
not the anchored head: a rewritten, inserted or re-ordered history, even re-chained with the
documented hash), truncated (the chain ends before an anchored seq), bad-signature (a digest the
trusted key did not sign), unreadable-digest. Events after the last anchor are said to be "not
yet anchored" (not a problem by itself). --export FILE checks an export's digest and count
instead, and the chains (and the record checks) of the executions it holds from their first event.
Exit 0 all intact, 1 any problem (or nothing to verify), 2 usage.

Options:
  --execution ARN      verify this execution (repeatable)
  --all                verify every execution in the table and every one the digest log anchors
  --export FILE        verify an export file (no store is opened)
  --anchor-key FILE    trust this public key (PEM) for anchors (default: locally the anchor key's,
                       $PLANGATE_ANCHOR_KEY_DIR or ~/.config/plangate/anchor-key.pub; on AWS the
                       KMS key's, by kms:GetPublicKey)
  --anchor-bucket B    with --aws: the anchor bucket (the stack output AnchorBucket) to check against
  --json               one verdict per execution as JSON lines

${TARGET_HELP}`;

export const usage = `Usage: plangate audit <query|export|verify> [options]

Query, export and verify the events table (local store by default, or --aws --table NAME).
The platform's policy is asked first whether you (your OS user) may read the audit trail
(ReadAudit): for a local store, the policy of the serve or run that holds it (recorded in the
store; the shipped set for a store no holder recorded one in), never one the reader picks; with
--aws, PLANGATE_POLICY_DIR or the shipped set (the table's IAM decides who reads it on AWS).

${QUERY_USAGE}

${EXPORT_USAGE}

${VERIFY_USAGE}`;

const SUBCOMMANDS: Record<string, { usage: string; run: (argv: string[]) => Promise<number> }> = {
  query: { usage: QUERY_USAGE, run: runQuery },
  export: { usage: EXPORT_USAGE, run: runExport },
  verify: { usage: VERIFY_USAGE, run: runVerify },
};

export const handlesOwnHelp = true;

export async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h') {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const sub = name !== undefined && Object.hasOwn(SUBCOMMANDS, name) ? SUBCOMMANDS[name] : undefined;
  if (!sub) {
    return usageError(
      name === undefined ? 'give a subcommand: query, export or verify' : `unknown subcommand "${name}"`,
      usage,
    );
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${sub.usage}\n`);
    return 0;
  }
  if (rest.some((arg) => arg === '--policy' || arg.startsWith('--policy=')))
    return usageError(
      "--policy is not the reader's to choose: the policy of the serve or run holding the store decides who reads it (docs/policy.md)",
      usage,
    );
  let policy: PolicySet;
  try {
    policy = rest.includes('--aws')
      ? await PolicySet.fromEnvironment()
      : await storeReadPolicy(storePaths(optionValue(rest, '--store') ?? defaultStoreDir()));
  } catch (error) {
    if (!(error instanceof PolicyLoadError)) throw error;
    process.stderr.write(`plangate audit: ${error.message}\n`);
    return 2;
  }
  const refused = readRefusal(policy, auditReadRequest(name as string));
  if (refused) {
    process.stderr.write(`plangate audit: ${refused}\n`);
    return 1;
  }
  return sub.run(rest);
}

/** The value of `--name VALUE` or `--name=VALUE` among raw arguments. */
function optionValue(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at >= 0) return args[at + 1];
  return args.find((arg) => arg.startsWith(`${name}=`))?.slice(name.length + 1);
}

class UsageError extends Error {}

const COMMON_OPTIONS = {
  execution: { type: 'string', multiple: true },
  plan: { type: 'string' },
  type: { type: 'string' },
  task: { type: 'string' },
  approver: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  store: { type: 'string' },
  aws: { type: 'boolean' },
  table: { type: 'string' },
  region: { type: 'string' },
} as const;

type Values = Record<string, string | boolean | string[] | undefined>;

function parse(argv: string[], extra: Record<string, { type: 'string' | 'boolean' }>): Values {
  try {
    return parseArgs({ args: argv, options: { ...COMMON_OPTIONS, ...extra }, allowPositionals: false })
      .values as Values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function targetOf(values: Values): AuditTargetSpec {
  if (values.aws) {
    if (typeof values.table !== 'string') throw new UsageError('--aws needs --table NAME (the events table)');
    if (values.store !== undefined) throw new UsageError('--store and --aws exclude each other');
    const region = awsRegion(typeof values.region === 'string' ? values.region : undefined);
    return { kind: 'aws', table: values.table, ...(region !== undefined ? { region } : {}) };
  }
  if (values.table !== undefined || values.region !== undefined) {
    throw new UsageError('--table and --region go with --aws');
  }
  return { kind: 'local', store: typeof values.store === 'string' ? values.store : defaultStoreDir() };
}

function filterOf(values: Values): AuditFilter {
  const executions = (values.execution as string[] | undefined) ?? [];
  if (executions.length > 1) throw new UsageError('give --execution once here');
  const input: Record<string, unknown> = {};
  for (const key of ['plan', 'type', 'task', 'approver', 'since', 'until'] as const) {
    if (values[key] !== undefined) input[key] = values[key];
  }
  if (executions[0] !== undefined) input.execution = executions[0];
  const parsed = AuditFilterSchema.safeParse(input);
  if (!parsed.success) {
    throw new UsageError(
      parsed.error.issues.map((i) => `--${i.path.join('.') || 'filter'}: ${i.message}`).join('\n'),
    );
  }
  return parsed.data;
}

function limitOf(values: Values): number | undefined {
  if (values.limit === undefined) return undefined;
  const text = String(values.limit);
  if (!/^\d+$/.test(text) || Number(text) < 1)
    throw new UsageError(`--limit: expected a positive integer, got ${text}`);
  return Number(text);
}

/** Runs `body` with the opened target, turning usage and target errors into exit codes. */
async function withTarget(
  command: string,
  commandUsage: string,
  prepare: () => { target: AuditTargetSpec },
  body: (target: Awaited<ReturnType<typeof openAuditTarget>>) => Promise<number>,
): Promise<number> {
  let spec: AuditTargetSpec;
  try {
    spec = prepare().target;
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message, commandUsage, command);
    throw error;
  }
  let target: Awaited<ReturnType<typeof openAuditTarget>>;
  try {
    target = await openAuditTarget(spec);
  } catch (error) {
    if (error instanceof AuditTargetError) return failure(command, error.message);
    throw error;
  }
  try {
    return await body(target);
  } catch (error) {
    return failure(command, `${target.source}: ${(error as Error).message}`);
  } finally {
    await target.close();
  }
}

async function runQuery(argv: string[]): Promise<number> {
  let filter: AuditFilter = {};
  let limit: number | undefined;
  let json = false;
  return withTarget(
    'query',
    QUERY_USAGE,
    () => {
      const values = parse(argv, { limit: { type: 'string' }, json: { type: 'boolean' } });
      filter = filterOf(values);
      limit = limitOf(values);
      json = values.json === true;
      return { target: targetOf(values) };
    },
    async (target) => {
      process.stderr.write(`${accessPlan(target.table, filter).explain}\n`);
      let count = 0;
      for await (const record of auditEvents(target.doc, target.table, filter, limit ? { limit } : {})) {
        process.stdout.write(json ? `${JSON.stringify(record)}\n` : `${tableRow(record)}\n`);
        count++;
      }
      process.stderr.write(`${count} event${count === 1 ? '' : 's'}\n`);
      return 0;
    },
  );
}

async function runExport(argv: string[]): Promise<number> {
  let filter: AuditFilter = {};
  let out = '';
  let format: ExportFormat = 'jsonl';
  return withTarget(
    'export',
    EXPORT_USAGE,
    () => {
      const values = parse(argv, { out: { type: 'string' }, format: { type: 'string' } });
      filter = filterOf(values);
      if (typeof values.out !== 'string' || values.out === '') throw new UsageError('--out FILE is required');
      out = values.out;
      const f = values.format ?? 'jsonl';
      if (!EXPORT_FORMATS.includes(f as ExportFormat)) {
        throw new UsageError(`--format: expected jsonl or csv, got ${String(f)}`);
      }
      format = f as ExportFormat;
      return { target: targetOf(values) };
    },
    async (target) => {
      process.stderr.write(`${accessPlan(target.table, filter).explain}\n`);
      const manifest = await exportEvents(auditEvents(target.doc, target.table, filter), {
        out,
        format,
        source: target.source,
        filter,
      });
      process.stdout.write(
        `Exported ${manifest.count} events to ${out} (${format}, sha256 ${manifest.sha256})\n`,
      );
      return 0;
    },
  );
}

async function runVerify(argv: string[]): Promise<number> {
  let values: Values;
  try {
    values = parse(argv, {
      all: { type: 'boolean' },
      export: { type: 'string' },
      json: { type: 'boolean' },
      'anchor-key': { type: 'string' },
      'anchor-bucket': { type: 'string' },
    });
  } catch (error) {
    return usageError((error as Error).message, VERIFY_USAGE, 'verify');
  }
  const executions = (values.execution as string[] | undefined) ?? [];
  const modes = [executions.length > 0, values.all === true, values.export !== undefined].filter(Boolean);
  if (modes.length !== 1) {
    return usageError('give exactly one of --execution ARN, --all or --export FILE', VERIFY_USAGE, 'verify');
  }
  const json = values.json === true;
  if (typeof values.export === 'string') return verifyExportFile(values.export, json);
  const anchorKeyFile = typeof values['anchor-key'] === 'string' ? values['anchor-key'] : undefined;
  const anchorBucket = typeof values['anchor-bucket'] === 'string' ? values['anchor-bucket'] : undefined;
  let spec: AuditTargetSpec | undefined;
  return withTarget(
    'verify',
    VERIFY_USAGE,
    () => {
      spec = targetOf(values);
      if (spec.kind === 'local' && anchorBucket !== undefined)
        throw new UsageError('--anchor-bucket goes with --aws (the local store keeps its anchors itself)');
      return { target: spec };
    },
    async (target) => {
      const anchors =
        spec?.kind === 'local'
          ? await localAnchorSource({ store: spec.store, anchorKeyFile })
          : anchorBucket !== undefined
            ? await awsAnchorSource({
                bucket: anchorBucket,
                ...(spec?.region ? { region: spec.region } : {}),
                ...(anchorKeyFile !== undefined ? { anchorKeyFile } : {}),
              })
            : undefined;
      if (!anchors)
        process.stderr.write(
          'No --anchor-bucket given: only the chain itself is checked (a re-chained rewrite is not detectable without the anchors).\n',
        );
      const ids =
        executions.length > 0
          ? executions
          : [
              ...new Set([
                ...(await listExecutionIds(target.doc, target.table)),
                ...(anchors?.byExecution.keys() ?? []),
              ]),
            ].sort();
      let broken = 0;
      let verified = 0;
      let unanchored = 0;
      for await (const verdict of verifyExecutions(target.doc, target.table, ids, target.definitions)) {
        verified++;
        const anchor = anchors
          ? await verifyAnchors(target.doc, target.table, verdict.executionId, anchors)
          : undefined;
        if (
          verdict.count === 0 ||
          verdict.problems.length > 0 ||
          verdict.checks.length > 0 ||
          (anchor?.problems.length ?? 0) > 0
        )
          broken++;
        if ((anchor?.unanchored ?? 0) > 0) unanchored++;
        printVerdict(verdict, json, anchor);
      }
      if (anchors) broken += reportUnreadableDigests(anchors, json);
      const summary =
        verified === 0
          ? `No executions in ${target.source}.`
          : `${verified} execution${verified === 1 ? '' : 's'} verified: ${broken === 0 ? 'all intact' : `${broken} with problems`}.`;
      process.stderr.write(`${summary}\n`);
      if (anchors && verified > 0)
        process.stderr.write(
          `${anchors.keyNote}; ${unanchored} execution(s) with events not yet anchored (${anchors.where}).\n`,
        );
      return verified === 0 || broken > 0 ? 1 : 0;
    },
  );
}

/** Lines of the digest log that are not digests: each reported (counted as one problem in all). */
function reportUnreadableDigests(anchors: AnchorSource, json: boolean): number {
  if (anchors.unreadable.length === 0) return 0;
  for (const { line, message } of anchors.unreadable) {
    const text = `${anchors.where}:${line}: unreadable-digest: ${message}`;
    process.stdout.write(
      json
        ? `${JSON.stringify({ digestLog: anchors.where, line, message })}\n`
        : `BROKEN   ${printable(text)}\n`,
    );
  }
  return 1;
}

async function verifyExportFile(file: string, json: boolean): Promise<number> {
  let check: Awaited<ReturnType<typeof checkExport>>;
  try {
    check = await checkExport(file);
  } catch (error) {
    return failure('verify', `${file}: ${(error as Error).message}`);
  }
  if (!check.ok) return failure('verify', check.problem);
  const byExecution = new Map<string, JournalRecord[]>();
  for (const record of check.records) {
    const list = byExecution.get(record.executionId) ?? [];
    list.push(record);
    byExecution.set(record.executionId, list);
  }
  let broken = 0;
  let partial = 0;
  for (const [executionId, records] of byExecution) {
    // A filtered export holds only part of a chain: only chains exported from their first event are checkable.
    const sorted = [...records].sort((a, b) => a.seq - b.seq);
    if (sorted.some((r, i) => r.seq !== i + 1)) {
      partial++;
      continue;
    }
    const items = sorted.map((r) => ({ ...r, sk: formatSeq(r.seq) }));
    const verdict = await checkExecution(executionId, items, { indexAttributes: false });
    if (verdict.problems.length > 0 || verdict.checks.length > 0) broken++;
    printVerdict(verdict, json);
  }
  process.stderr.write(
    `${file}: digest and count (${check.manifest.count}) match its manifest; ${byExecution.size - partial} whole chain(s) checked, ${broken} with problems; ${partial} partial (filtered) not checkable.\n`,
  );
  return broken > 0 ? 1 : 0;
}

function printVerdict(verdict: ExecutionVerdict, json: boolean, anchor?: AnchorCheck): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(anchor ? { ...verdict, anchors: anchor } : verdict)}\n`);
    return;
  }
  const id = printable(verdict.executionId);
  const problems = [
    ...[...verdict.problems, ...(anchor?.problems ?? [])].map((p) => ({
      seq: String(p.seq ?? '?'),
      kind: p.kind,
      message: p.message,
    })),
    // A check about the execution as a whole names no event.
    ...verdict.checks.map((c) => ({ seq: String(c.seq ?? '-'), kind: c.check, message: c.message })),
  ];
  if (verdict.count === 0) {
    process.stdout.write(`MISSING  ${id}: no events stored\n`);
  } else if (problems.length === 0) {
    process.stdout.write(
      `ok       ${id}: ${verdict.count} events, head ${verdict.head}${anchorNote(anchor)}\n`,
    );
    return;
  } else {
    process.stdout.write(
      `BROKEN   ${id}: ${verdict.count} events, ${problems.length} problem(s)${anchorNote(anchor)}\n`,
    );
  }
  for (const p of problems) {
    process.stdout.write(`  ${p.seq.padStart(5)}  ${p.kind.padEnd(14)} ${printable(p.message)}\n`);
  }
}

/** What the anchors say of an execution: how far it is anchored, and what is not yet. */
function anchorNote(anchor: AnchorCheck | undefined): string {
  if (!anchor) return '';
  const anchored =
    anchor.anchoredSeq > 0
      ? `; anchored to seq ${anchor.anchoredSeq} (${anchor.anchoredAt})`
      : '; no anchor holds';
  return `${anchored}${anchor.unanchored > 0 ? `; ${anchor.unanchored} event(s) not yet anchored` : ''}`;
}

function tableRow(r: JournalRecord): string {
  return [
    r.timestamp,
    String(r.seq).padStart(4),
    r.event.padEnd(28),
    (r.task_id ?? '-').padEnd(16),
    r.executionId,
    JSON.stringify(r.details),
  ]
    .map(printable)
    .join('  ');
}

/** Text safe for a terminal, on one line: the one rule of every channel (lib/plan/visible-text.ts), line breaks too. */
export function printable(text: string): string {
  return visibleText(text).replace(/[\n\t]/g, (c) => `⟨${characterLabel(c)}⟩`);
}

function usageError(message: string, text: string, command?: string): number {
  process.stderr.write(`plangate audit${command ? ` ${command}` : ''}: ${message}\n\n${text}\n`);
  return 2;
}

function failure(command: string, message: string): number {
  process.stderr.write(`plangate audit ${command}: ${printable(message)}\n`);
  return 1;
}
