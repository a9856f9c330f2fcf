/**
 * The local event bus: an HTTP server on loopback speaking EventBridge's AWS JSON 1.1 protocol
 * (PutEvents, PutRule, PutTargets, ListRules, ListTargetsByRule, DeleteRule, RemoveTargets), so the
 * ordinary @aws-sdk/client-eventbridge talks to it through an endpoint override. Every accepted
 * event is appended to a JSON-lines archive and fanned out to in-process subscribers and to the
 * in-process handlers of matching rules' targets.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { AppendLog } from './append-log.ts';
import { type EventPattern, matchesPattern, patternProblem } from './event-pattern.ts';
import { closeServer, listenOnLoopback } from './listen.ts';

/** An event as EventBridge delivers it to targets (and as rules' patterns see it). */
export interface BusEvent {
  readonly version: '0';
  readonly id: string;
  readonly 'detail-type': string;
  readonly source: string;
  readonly account: string;
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: unknown;
  /** Local extra: which bus it was put on. */
  readonly eventBusName: string;
}

export type BusListener = (event: BusEvent) => void | Promise<void>;

interface Rule {
  Name: string;
  Arn: string;
  EventBusName: string;
  EventPattern?: string;
  State: 'ENABLED' | 'DISABLED';
  Description?: string;
  Targets: { Id: string; Arn: string; Input?: string }[];
}

export interface LocalEventBusProps {
  /** The `.plangate` directory; the archive and rules go to `<dataDir>/eventbus/`. Nothing is kept when omitted. */
  readonly dataDir?: string;
  /** @default 0 (any free port) */
  readonly port?: number;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** @default '000000000000' */
  readonly account?: string;
  /**
   * Called when a subscriber or target handler throws (the put still succeeds, as on AWS).
   * @default writes the error to stderr
   */
  readonly onListenerError?: (error: unknown, event: BusEvent) => void;
}

/** EventBridge's per-entry limit. */
const MAX_ENTRY_BYTES = 256 * 1024;
const MAX_ENTRIES = 10;

export class LocalEventBus {
  readonly endpoint: string;
  /** The JSON-lines archive, when persistent. */
  readonly archivePath?: string;
  private readonly subscribers = new Set<{ pattern: EventPattern; listener: BusListener }>();
  private readonly targetHandlers = new Map<string, BusListener>();
  private readonly pending = new Set<Promise<void>>();
  private readonly archive: AppendLog | undefined;

  private constructor(
    private readonly props: LocalEventBusProps,
    private readonly server: ReturnType<typeof createServer>,
    endpoint: string,
    private readonly rules: Map<string, Rule>,
    private readonly rulesPath: string | undefined,
  ) {
    this.endpoint = endpoint;
    if (props.dataDir) {
      this.archivePath = join(props.dataDir, 'eventbus', 'events.jsonl');
      this.archive = new AppendLog(this.archivePath);
    }
  }

  static async start(props: LocalEventBusProps = {}): Promise<LocalEventBus> {
    let rulesPath: string | undefined;
    const rules = new Map<string, Rule>();
    if (props.dataDir) {
      await mkdir(join(props.dataDir, 'eventbus'), { recursive: true });
      rulesPath = join(props.dataDir, 'eventbus', 'rules.json');
      const saved = await readFile(rulesPath, 'utf8').catch(() => '[]');
      for (const rule of JSON.parse(saved) as Rule[]) rules.set(ruleKey(rule.EventBusName, rule.Name), rule);
    }
    let bus: LocalEventBus | undefined;
    const server = createServer((req, res) => {
      (bus as LocalEventBus).handle(req, res).catch((error: unknown) => {
        reply(res, 500, { __type: 'InternalException', message: String(error) });
      });
    });
    const endpoint = await listenOnLoopback(server, props.port, {
      refuse: (res, message) => reply(res, 403, { __type: 'AccessDeniedException', message }),
    });
    bus = new LocalEventBus(props, server, endpoint, rules, rulesPath);
    return bus;
  }

  /** Calls `listener` for every event matching `pattern`; returns the unsubscribe function. */
  subscribe(pattern: EventPattern, listener: BusListener): () => void {
    const problem = patternProblem(pattern);
    if (problem) throw new Error(`invalid event pattern: ${problem}`);
    const entry = { pattern, listener };
    this.subscribers.add(entry);
    return () => {
      this.subscribers.delete(entry);
    };
  }

  /** Handles deliveries to rule targets with this ARN (local stand-in for invoking the target). */
  onTarget(arn: string, handler: BusListener): void {
    this.targetHandlers.set(arn, handler);
  }

  /** Resolves when every delivery started so far has finished. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  async close(): Promise<void> {
    await this.drain();
    await closeServer(this.server);
    this.archive?.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = String(req.headers['x-amz-target'] ?? '');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      return reply(res, 400, { __type: 'SerializationException', message: 'request body is not JSON' });
    }
    const operation = target.startsWith('AWSEvents.') ? target.slice('AWSEvents.'.length) : '';
    try {
      switch (operation) {
        case 'PutEvents':
          return reply(res, 200, await this.putEvents(input));
        case 'PutRule':
          return reply(res, 200, await this.putRule(input));
        case 'PutTargets':
          return reply(res, 200, await this.putTargets(input));
        case 'RemoveTargets':
          return reply(res, 200, await this.removeTargets(input));
        case 'DeleteRule':
          return reply(res, 200, await this.deleteRule(input));
        case 'ListRules':
          return reply(res, 200, this.listRules(input));
        case 'ListTargetsByRule':
          return reply(res, 200, { Targets: this.rule(input).Targets });
        default:
          return reply(res, 400, {
            __type: 'UnknownOperationException',
            message: `the local event bus does not implement ${target || '(no X-Amz-Target)'}`,
          });
      }
    } catch (error) {
      if (error instanceof BusError) return reply(res, 400, { __type: error.code, message: error.message });
      throw error;
    }
  }

  private async putEvents(input: Record<string, unknown>): Promise<unknown> {
    const entries = input.Entries;
    if (!Array.isArray(entries) || entries.length === 0 || entries.length > MAX_ENTRIES) {
      throw new BusError('ValidationException', `Entries must hold 1 to ${MAX_ENTRIES} entries`);
    }
    const results: Record<string, string>[] = [];
    const accepted: BusEvent[] = [];
    for (const [i, raw] of entries.entries()) {
      const entry = (raw ?? {}) as Record<string, unknown>;
      const checked = checkEntry(entry);
      if ('problem' in checked) {
        results.push({ ErrorCode: 'InvalidArgument', ErrorMessage: `Entries[${i}]: ${checked.problem}` });
        continue;
      }
      const event: BusEvent = {
        version: '0',
        id: randomUUID(),
        'detail-type': entry.DetailType as string,
        source: entry.Source as string,
        account: this.props.account ?? '000000000000',
        time: eventTime(entry.Time),
        region: this.props.region ?? 'us-east-1',
        resources: Array.isArray(entry.Resources) ? (entry.Resources as string[]) : [],
        detail: checked.detail,
        eventBusName: busName(entry.EventBusName),
      };
      accepted.push(event);
      results.push({ EventId: event.id });
    }
    if (this.archive && accepted.length > 0) {
      this.archive.append(accepted.map((e) => `${JSON.stringify(e)}\n`).join(''));
    }
    for (const event of accepted) this.fanOut(event);
    return { Entries: results, FailedEntryCount: results.filter((r) => r.ErrorCode).length };
  }

  private fanOut(event: BusEvent): void {
    const deliveries: { listener: BusListener; payload: BusEvent }[] = [];
    for (const { pattern, listener } of this.subscribers) {
      if (matchesPattern(event, pattern)) deliveries.push({ listener, payload: event });
    }
    for (const rule of this.rules.values()) {
      if (rule.State !== 'ENABLED' || rule.EventBusName !== event.eventBusName || !rule.EventPattern)
        continue;
      if (!matchesPattern(event, JSON.parse(rule.EventPattern) as EventPattern)) continue;
      for (const t of rule.Targets) {
        const handler = this.targetHandlers.get(t.Arn);
        if (handler) deliveries.push({ listener: handler, payload: t.Input ? JSON.parse(t.Input) : event });
      }
    }
    for (const { listener, payload } of deliveries) {
      const delivery = Promise.resolve()
        .then(() => listener(payload))
        .catch((error: unknown) =>
          (this.props.onListenerError ?? ((e) => console.error('local event bus listener failed:', e)))(
            error,
            event,
          ),
        )
        .finally(() => this.pending.delete(delivery));
      this.pending.add(delivery);
    }
  }

  private async putRule(input: Record<string, unknown>): Promise<unknown> {
    const name = requireString(input, 'Name');
    const bus = busName(input.EventBusName);
    let pattern: string | undefined;
    if (input.EventPattern !== undefined) {
      pattern = requireString(input, 'EventPattern');
      let parsed: unknown;
      try {
        parsed = JSON.parse(pattern);
      } catch {
        throw new BusError('InvalidEventPatternException', 'EventPattern is not JSON');
      }
      const problem = patternProblem(parsed);
      if (problem) throw new BusError('InvalidEventPatternException', problem);
    } else if (input.ScheduleExpression === undefined) {
      throw new BusError('ValidationException', 'a rule needs an EventPattern or a ScheduleExpression');
    }
    const key = ruleKey(bus, name);
    const rule: Rule = {
      Name: name,
      Arn: `arn:aws:events:${this.props.region ?? 'us-east-1'}:${this.props.account ?? '000000000000'}:rule/${bus === 'default' ? '' : `${bus}/`}${name}`,
      EventBusName: bus,
      EventPattern: pattern,
      State: input.State === 'DISABLED' ? 'DISABLED' : 'ENABLED',
      Description: typeof input.Description === 'string' ? input.Description : undefined,
      Targets: this.rules.get(key)?.Targets ?? [],
    };
    this.rules.set(key, rule);
    await this.saveRules();
    return { RuleArn: rule.Arn };
  }

  private async putTargets(input: Record<string, unknown>): Promise<unknown> {
    const rule = this.rule(input);
    const targets = input.Targets;
    if (!Array.isArray(targets) || targets.length === 0)
      throw new BusError('ValidationException', 'Targets is empty');
    for (const t of targets as Record<string, unknown>[]) {
      const id = requireString(t, 'Id');
      const target = {
        Id: id,
        Arn: requireString(t, 'Arn'),
        Input: typeof t.Input === 'string' ? t.Input : undefined,
      };
      rule.Targets = [...rule.Targets.filter((x) => x.Id !== id), target];
    }
    await this.saveRules();
    return { FailedEntryCount: 0, FailedEntries: [] };
  }

  private async removeTargets(input: Record<string, unknown>): Promise<unknown> {
    const rule = this.rule(input);
    const ids = Array.isArray(input.Ids) ? (input.Ids as string[]) : [];
    rule.Targets = rule.Targets.filter((t) => !ids.includes(t.Id));
    await this.saveRules();
    return { FailedEntryCount: 0, FailedEntries: [] };
  }

  private async deleteRule(input: Record<string, unknown>): Promise<unknown> {
    const rule = this.rule({ ...input, Rule: input.Name });
    if (rule.Targets.length > 0)
      throw new BusError('ValidationException', "Rule can't be deleted since it has targets.");
    this.rules.delete(ruleKey(rule.EventBusName, rule.Name));
    await this.saveRules();
    return {};
  }

  private listRules(input: Record<string, unknown>): unknown {
    const bus = busName(input.EventBusName);
    const prefix = typeof input.NamePrefix === 'string' ? input.NamePrefix : '';
    const rules = [...this.rules.values()]
      .filter((r) => r.EventBusName === bus && r.Name.startsWith(prefix))
      .sort((a, b) => a.Name.localeCompare(b.Name))
      .map(({ Targets: _targets, ...rest }) => rest);
    return { Rules: rules };
  }

  private rule(input: Record<string, unknown>): Rule {
    const name = requireString(input, 'Rule');
    const rule = this.rules.get(ruleKey(busName(input.EventBusName), name));
    if (!rule) throw new BusError('ResourceNotFoundException', `Rule ${name} does not exist.`);
    return rule;
  }

  private async saveRules(): Promise<void> {
    if (this.rulesPath) await writeFile(this.rulesPath, JSON.stringify([...this.rules.values()], null, 2));
  }
}

/** Starts the local event bus on loopback. */
export function startLocalEventBus(props: LocalEventBusProps = {}): Promise<LocalEventBus> {
  return LocalEventBus.start(props);
}

class BusError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The entry's parsed Detail, or why the entry is refused. */
function checkEntry(entry: Record<string, unknown>): { detail: object } | { problem: string } {
  for (const field of ['Source', 'DetailType', 'Detail']) {
    if (typeof entry[field] !== 'string' || entry[field] === '') return { problem: `${field} is required` };
  }
  let detail: unknown;
  try {
    detail = JSON.parse(entry.Detail as string);
  } catch {
    return { problem: 'Detail is not valid JSON' };
  }
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail))
    return { problem: 'Detail must be a JSON object' };
  if (Buffer.byteLength(JSON.stringify(entry)) > MAX_ENTRY_BYTES)
    return { problem: 'entry is larger than 256 KB' };
  return { detail };
}

/** The SDK sends Time as epoch seconds; events carry it as ISO-8601 at second precision, like AWS. */
function eventTime(time: unknown): string {
  const date =
    typeof time === 'number' ? new Date(time * 1000) : typeof time === 'string' ? new Date(time) : new Date();
  return `${(Number.isNaN(date.getTime()) ? new Date() : date).toISOString().slice(0, 19)}Z`;
}

function busName(value: unknown): string {
  if (typeof value !== 'string' || value === '') return 'default';
  // An ARN names the bus after "event-bus/".
  const arn = /:event-bus\/(.+)$/.exec(value);
  return arn?.[1] ?? value;
}

const ruleKey = (bus: string, name: string): string => `${bus}/${name}`;

function requireString(input: Record<string, unknown>, field: string): string {
  const value = input[field];
  if (typeof value !== 'string' || value === '')
    throw new BusError('ValidationException', `${field} is required`);
  return value;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...(status >= 400 && body && typeof body === 'object' && '__type' in body
      ? { 'x-amzn-errortype': String((body as { __type: string }).__type) }
      : {}),
  });
  res.end(text);
}
