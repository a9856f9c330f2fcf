/**
 * The policy sees every fact a plan controls, as the harness understands it (issue 31): hosts in
 * the canonical form the http tool connects to, whatever the spelling; the host operands of
 * network programs in shell; the programs a step runs after quoting and wrappers; an unknown
 * destination where the analysis cannot tell; the AWS services and functions called by any route;
 * the whole approval ladder; and, on a gate, the facts of what it guards. Each is asked of a real
 * PolicySet with the rule an organisation would write.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { callFacts, gateEntity, planEntity, planFacts, stepEntity } from '../../lib/policy/entities.ts';
import { PolicyLoadError, PolicySet } from '../../lib/policy/policy-set.ts';
import { POLICY_SCHEMA } from '../../lib/policy/schema.ts';

const QUARANTINED = 'quarantine.example.net';
const identity = { id: 'p', version: 1, digest: 'sha256:x' };

async function policySet(rules: string): Promise<PolicySet> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-facts-'));
  await writeFile(join(dir, 'org.cedar'), `permit (principal, action, resource);\n${rules}`);
  return PolicySet.load(dir);
}

/** The worked example's rule (examples/policies/org): the canonical host alone. */
const HOSTS_ONLY = `@id("no-quarantined-hosts")
forbid (principal, action == Action::"RunStep", resource)
when { resource.hosts.contains("${QUARANTINED}") };`;

/** The org's host rule as docs/policy.md says to write it: the canonical host, or a destination not known. */
const HOST_RULE = `@id("no-quarantined-hosts")
forbid (principal, action == Action::"RunStep", resource)
when { resource.hosts.contains("${QUARANTINED}") || resource.destinationUnknown };`;

/** A decision of a request that fits the schema (a request that does not is denied too: not what is tested). */
function decided(policy: PolicySet, request: Parameters<PolicySet['authorize']>[0]) {
  const decision = policy.authorize(request);
  expect(decision.errors).toEqual([]);
  return decision;
}

async function runStepDecision(policy: PolicySet, tool: string, args: Record<string, unknown>) {
  const facts = callFacts({ tool, args }, false);
  return decided(policy, {
    principal: { name: 'carol' },
    action: 'RunStep',
    resource: stepEntity(identity, 's', facts, { args }),
    context: { attempt: 1, rollback: false, sandboxed: true },
  });
}

/** Spellings of the quarantined host's URL that fetch sends to the host itself. */
const URL_SPELLINGS = [
  `https://${QUARANTINED}/x`,
  `https://${QUARANTINED}./x`,
  'https://quarantine%2Eexample.net/x',
  'https://quarantine%2eexample%2Enet/x',
  'https://quarantine。example.net/x',
  'https://quarantine．example．net/x',
  'https://quarantine｡example.net/x',
  'https://ｑｕａｒａｎｔｉｎｅ.example.net/x',
  'https://quar\tantine.example.net/x',
  'https://quarantine.exa\nmple.net/x',
  `https:${QUARANTINED}/x`,
  `https:/${QUARANTINED}/x`,
  `https:\\\\${QUARANTINED}/x`,
  `HTTPS://QUARANTINE.EXAMPLE.NET/x`,
  `https://user:pw@${QUARANTINED}:8443/x`,
  ` https://${QUARANTINED}/x `,
];

/** Shell spellings that reach the quarantined host. */
const SHELL_SPELLINGS = [
  `curl ${QUARANTINED}/x`,
  `curl -sS ${QUARANTINED}`,
  `curl "${QUARANTINED}/drop"`,
  `c''url 'https://${QUARANTINED}/x'`,
  `\\curl https://${QUARANTINED}./x`,
  `curl --proxy ${QUARANTINED}:3128 https://ok.example.com`,
  `curl -x http://${QUARANTINED}:3128 https://ok.example.com`,
  `curl --connect-to ok.example.com:443:${QUARANTINED}:443 https://ok.example.com`,
  `curl --url https://${QUARANTINED}/`,
  `wget -qO- ${QUARANTINED}`,
  `wget -e https_proxy=${QUARANTINED}:3128 https://ok.example.com`,
  `ssh deploy@${QUARANTINED} uptime`,
  `ssh -J ${QUARANTINED} ok.example.com`,
  `ssh -o ProxyJump=${QUARANTINED} ok.example.com`,
  `scp ./f deploy@${QUARANTINED}:/tmp/`,
  `rsync -a ./d ${QUARANTINED}:/srv`,
  `git clone git@${QUARANTINED}:team/repo.git`,
  `git clone https://${QUARANTINED}/team/repo.git`,
  `git push ssh://${QUARANTINED}/repo main`,
  `git -c http.proxy=http://${QUARANTINED}:3128 clone https://ok.example.com/r.git`,
  `exec 3<>/dev/tcp/${QUARANTINED}/80`,
  `echo hi > /dev/tcp/${QUARANTINED}/80`,
  `nc ${QUARANTINED} 80 < /dev/null`,
  `sudo -u app curl ${QUARANTINED}`,
  `bash -c "curl -s ${QUARANTINED}"`,
  `env A=1 timeout 5 curl ${QUARANTINED}`,
  `http GET ${QUARANTINED}/x`,
  `curl https://quarantine%2Eexample.net/`,
  `curl QUARANTINE.EXAMPLE.NET.`,
  `https_proxy=${QUARANTINED}:3128 curl https://ok.example.com`,
  `export ALL_PROXY="http://${QUARANTINED}:1080"; curl https://ok.example.com`,
];

/** Shell commands whose destination the analysis cannot know: a rule must treat them as possibly the host. */
const UNKNOWN_DESTINATIONS = [
  'curl "$HOST/x"',
  'curl $(cat host.txt)',
  'curl `cat host.txt`',
  'curl https://${steps.pick.message}/x',
  'wget -i urls.txt',
  'curl -K curl.cfg',
  'ssh -F ./cfg box uptime',
  'git pull',
  'git fetch origin',
  'exec 3<>/dev/tcp/$H/80',
  '$NET_TOOL host',
  'python3 -c "import urllib.request as u; u.urlopen(h)"',
  'eval "$CMD"',
  './fetch.sh',
  `curl 'https://quarantine.example.{net,org}/'`,
  '"$SH" -c "curl quarantine.example.net"',
  'https_proxy=$P curl https://ok.example.com',
];

describe('hosts: the canonical host the http tool connects to, whatever the spelling', () => {
  it('every URL spelling that reaches the quarantined host is seen as it (no-quarantined-hosts denies)', async () => {
    const policy = await policySet(HOSTS_ONLY);
    for (const url of URL_SPELLINGS) {
      const decision = await runStepDecision(policy, 'http', { method: 'GET', url });
      expect([url, decision.decision]).toEqual([url, 'deny']);
      expect(callFacts({ tool: 'http', args: { method: 'GET', url } }, false).hosts).toContain(QUARANTINED);
    }
    // No host at all (two trailing dots, as the harness's proxy reads it): the destination is unknown.
    expect(
      callFacts({ tool: 'http', args: { method: 'GET', url: `https://${QUARANTINED}../x` } }, false),
    ).toMatchObject({ hosts: [], unknownDestinations: [expect.stringContaining('not a URL')] });
  });

  it('case, trailing dots, percent-escapes and ideographic dots never hide a host (fast-check)', () => {
    const dots = fc.constantFrom('.', '。', '．', '｡', '%2E', '%2e');
    const letter = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz');
    const label = fc.array(letter, { minLength: 1, maxLength: 8 }).map((l) => l.join(''));
    const spelled = (text: string, upper: boolean[], wide: boolean[]) =>
      [...text]
        .map((ch, i) => {
          const c = upper[i % upper.length] ? ch.toUpperCase() : ch;
          return wide[i % wide.length] ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c;
        })
        .join('');
    fc.assert(
      fc.property(
        fc.array(label, { minLength: 2, maxLength: 4 }),
        fc.array(dots, { minLength: 4, maxLength: 4 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.constantFrom('', '.'),
        fc.constantFrom('https://', 'https:', 'https:/', 'http://u@', 'HTTP://'),
        (labels, seps, upper, wide, trailing, scheme) => {
          const host = labels.join('.');
          const written = labels
            .map((l) => spelled(l, upper, wide))
            .reduce((a, l, i) => `${a}${seps[i - 1]}${l}`);
          const url = `${scheme}${written}${trailing}/x`;
          const facts = callFacts({ tool: 'http', args: { method: 'GET', url } }, false);
          expect(facts.hosts, url).toEqual([host]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('shell: the host operands of network programs, with or without a scheme, through quoting and wrappers', async () => {
    const policy = await policySet(HOSTS_ONLY);
    for (const command of SHELL_SPELLINGS) {
      const facts = callFacts({ tool: 'shell', args: { command } }, false);
      expect([command, facts.hosts]).toEqual([command, expect.arrayContaining([QUARANTINED])]);
      expect([command, (await runStepDecision(policy, 'shell', { command })).decision]).toEqual([
        command,
        'deny',
      ]);
    }
  });

  it('shell: a destination the analysis cannot know is an unknown destination, which the rule treats as the host', async () => {
    const policy = await policySet(HOST_RULE);
    for (const command of UNKNOWN_DESTINATIONS) {
      const facts = callFacts({ tool: 'shell', args: { command } }, false);
      expect([command, facts.unknownDestinations.length > 0]).toEqual([command, true]);
      expect([command, (await runStepDecision(policy, 'shell', { command })).decision]).toEqual([
        command,
        'deny',
      ]);
    }
    // A variable the step's env sets is read with its value; a harmless one passes.
    const env = { HOST: QUARANTINED };
    expect(
      callFacts({ tool: 'shell', args: { command: 'curl "https://$HOST/x"', env } }, false).hosts,
    ).toEqual([QUARANTINED]);
    const fine = { command: 'curl -sS "https://$HOST/x" | jq .', env: { HOST: 'ok.example.com' } };
    expect(callFacts({ tool: 'shell', args: fine }, false)).toMatchObject({
      hosts: ['ok.example.com'],
      unknownDestinations: [],
    });
    expect((await runStepDecision(policy, 'shell', fine)).decision).toBe('allow');
    // Unless the command may change it first.
    const reassigned = { command: 'HOST=x; curl "https://$HOST/x"', env: { HOST: 'ok.example.com' } };
    expect(callFacts({ tool: 'shell', args: reassigned }, false).unknownDestinations).not.toEqual([]);
    // A shell named by an env variable runs what the analysis did not read.
    const shellByName = { command: '"$SH" -c "curl -s ok.example.com"', env: { SH: 'bash' } };
    expect(callFacts({ tool: 'shell', args: shellByName }, false).unknownDestinations).not.toEqual([]);
    // A proxy in the step's env is where curl connects.
    const proxied = { command: 'curl https://ok.example.com', env: { https_proxy: `${QUARANTINED}:3128` } };
    expect(callFacts({ tool: 'shell', args: proxied }, false).hosts).toContain(QUARANTINED);
  });
});

describe('programs: what a step runs, as the shell analysis parsed it', () => {
  const RULE = `@id("kubectl-is-for-sre")
forbid (principal, action == Action::"RunStep", resource)
when { resource.programs.contains("kubectl") || resource.programUnknown };`;
  const DODGES = [
    'kubectl get pods',
    'k\\ubectl get pods',
    "kube''ctl get pods",
    'kube""ctl get pods',
    "$'kube\\x63tl' get pods",
    '$(printf kube)ctl get pods',
    '`printf kubectl` get pods',
    '"$TOOL" get pods',
    '/usr/local/bin/kubectl get pods',
    'sudo -E kubectl delete ns x',
    'env -i kubectl get pods',
    'bash -c "kubectl get pods"',
    'sh -c \'eval "kube""ctl get pods"\'',
    'timeout 5 nice -n 5 kubectl get pods',
    'xargs kubectl get < /dev/null',
    'command kubectl get pods',
  ];

  it('every spelling of a program is that program, or a program known only at run time', async () => {
    const policy = await policySet(RULE);
    for (const command of DODGES) {
      const args = { command, env: { TOOL: 'kubectl' } };
      const decision = await runStepDecision(policy, 'shell', args);
      expect([command, decision.decision]).toEqual([command, 'deny']);
    }
    expect(
      callFacts({ tool: 'shell', args: { command: '"$TOOL" get pods', env: { TOOL: 'kubectl' } } }, false)
        .programs,
    ).toEqual(['kubectl']);
    expect((await runStepDecision(policy, 'shell', { command: 'ls -la | wc -l' })).decision).toBe('allow');
  });

  it('each step carries its risk class', () => {
    const risk = (command: string) =>
      stepEntity(identity, 's', callFacts({ tool: 'shell', args: { command } }, true)).attrs.risk;
    expect(risk('ls -la')).toBe('read-only');
    expect(risk('rm -rf ./out')).toBe('destructive');
    expect(risk('make build')).toBe('unknown');
  });
});

describe('AWS: the services and functions a step may call, by any route', () => {
  const RULE = `@id("lambda-is-for-deployers")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.awsServices.contains("lambda") }
unless { principal in Group::"deployers" };`;
  const routes: [string, Record<string, unknown>, string | undefined][] = [
    ['lambda', { functionName: 'warm' }, 'warm'],
    ['shell', { command: 'aws lambda invoke --function-name warm out.json' }, 'warm'],
    [
      'shell',
      { command: 'aws --region eu-west-1 lambda invoke-async --function-name warm --invoke-args x' },
      'warm',
    ],
    [
      'shell',
      {
        command: 'curl -X POST https://lambda.eu-west-1.amazonaws.com/2015-03-31/functions/warm/invocations',
      },
      'warm',
    ],
    [
      'http',
      { method: 'POST', url: 'https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/warm/invocations' },
      'warm',
    ],
    [
      'http',
      {
        method: 'POST',
        url: 'https://LAMBDA.us-east-1.amazonaws.com./2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A1%3Afunction%3Awarm/invocations',
      },
      'arn:aws:lambda:us-east-1:1:function:warm',
    ],
    ['http', { method: 'GET', url: 'https://abcdef123.lambda-url.eu-west-1.on.aws/' }, 'abcdef123'],
    ['shell', { command: 'curl https://abcdef123.lambda-url.eu-west-1.on.aws/' }, 'abcdef123'],
  ];

  it('the lambda tool, the aws CLI, the invoke API over http and function URLs are all Lambda', async () => {
    const policy = await policySet(RULE);
    for (const [tool, args, fn] of routes) {
      const plan = PlanSchema.parse({
        id: 'p',
        objective: 'Warm the cache once',
        sizePolicy: { minSteps: 1 },
        steps: [{ id: 's', description: 'Warm it', tool, args, requiresApproval: true }],
      });
      const facts = planFacts(plan);
      expect(facts.steps.s?.awsServices, JSON.stringify(args)).toContain('lambda');
      if (fn) expect(facts.steps.s?.lambdaFunctions, JSON.stringify(args)).toEqual([fn]);
      const decision = decided(policy, {
        principal: { name: 'mallory' },
        action: 'SubmitPlan',
        resource: planEntity(identity, facts, 'mallory'),
        context: { channel: 'api', solo: false },
      });
      expect([JSON.stringify(args), decision.decision]).toEqual([JSON.stringify(args), 'deny']);
    }
  });
});

describe('the approval ladder: every rung, the longest wait, the smallest quorum', () => {
  const ladderPlan = PlanSchema.parse({
    id: 'ladder',
    objective: 'Echo one value',
    sizePolicy: { minSteps: 1 },
    approval: {
      approvers: ['sam', 'sue'],
      quorum: 2,
      timeoutSeconds: 86_400,
      escalateTo: [
        { approvers: ['friend'], quorum: 1 },
        { approvers: ['a'] },
        { approvers: ['b'] },
        { approvers: ['c'] },
        { approvers: ['d'] },
      ],
    },
    steps: [{ id: 's', description: 'Echo', tool: 'echo', args: { message: 'hi' } }],
  });

  it('a one-day wait rule sees a six-day ladder; a quorum of 2 that drops to 1 is seen', async () => {
    const attrs = planEntity(identity, planFacts(ladderPlan)).attrs;
    expect(attrs.approval).toMatchObject({
      timeoutSeconds: 86_400,
      rungs: 6,
      longestWaitSeconds: 6 * 86_400,
      smallestQuorum: 1,
      everyApprover: ['a', 'b', 'c', 'd', 'friend', 'sam', 'sue'],
      escalateTo: [
        { approvers: ['friend'], quorum: 1, waitSeconds: 86_400 },
        { approvers: ['a'], quorum: 1, waitSeconds: 86_400 },
        { approvers: ['b'], quorum: 1, waitSeconds: 86_400 },
        { approvers: ['c'], quorum: 1, waitSeconds: 86_400 },
        { approvers: ['d'], quorum: 1, waitSeconds: 86_400 },
      ],
    });
    const policy = await policySet(`@id("a-day-at-most")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.approval.longestWaitSeconds > 86400 };
@id("two-approvers-on-every-rung")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.approval.smallestQuorum < 2 };`);
    const decision = decided(policy, {
      principal: { name: 'carol' },
      action: 'SubmitPlan',
      resource: planEntity(identity, planFacts(ladderPlan), 'carol'),
      context: { channel: 'api', solo: false },
    });
    expect(decision).toMatchObject({ decision: 'deny' });
    expect([...decision.determiningPolicies].sort()).toEqual([
      'a-day-at-most',
      'two-approvers-on-every-rung',
    ]);
  });
});

describe('gates carry the facts of the steps they guard', () => {
  const prodPlan = PlanSchema.parse({
    id: 'prod',
    objective: 'Check the prod API and list the pods',
    sizePolicy: { minSteps: 1 },
    steps: [
      {
        id: 'ping',
        description: 'Ping prod',
        tool: 'http',
        args: { method: 'GET', url: 'https://API.prod.example.com./health' },
      },
      {
        id: 'pods',
        description: 'List pods',
        tool: 'shell',
        dependsOn: ['ping'],
        args: { command: 'k\\ubectl get pods' },
        requiresApproval: true,
      },
    ],
  });

  it('"gates of plans that reach prod need two sre" validates and decides', async () => {
    const policy = await policySet(`@id("prod-needs-two-sre")
forbid (principal, action == Action::"CompleteGate", resource)
when { resource.hosts.contains("api.prod.example.com") || resource.programs.contains("kubectl") }
unless { resource.hasTag("sre") && resource.getTag("sre") >= 2 };`);
    const facts = planFacts(prodPlan);
    const complete = (stepId: string | undefined, approvals: { name: string; groups: string[] }[]) =>
      decided(policy, {
        principal: { name: approvals[0]?.name ?? '' },
        action: 'CompleteGate',
        resource: gateEntity(
          { kind: stepId ? 'step' : 'plan', plan: identity, ...(stepId ? { stepId } : {}), quorum: 1 },
          facts,
          approvals,
        ),
        entities: [planEntity(identity, facts)],
      });
    expect((await complete(undefined, [{ name: 'dev', groups: [] }])).decision).toBe('deny');
    expect((await complete('pods', [{ name: 'dev', groups: [] }])).decision).toBe('deny');
    expect(
      (
        await complete(undefined, [
          { name: 'sam', groups: ['sre'] },
          { name: 'sue', groups: ['sre'] },
        ])
      ).decision,
    ).toBe('allow');
    const gate = gateEntity({ kind: 'step', plan: identity, stepId: 'pods', quorum: 1 }, facts, []);
    expect(gate.attrs).toMatchObject({
      steps: ['pods'],
      tools: ['shell'],
      programs: ['kubectl'],
      risk: 'read-only',
    });
    const planGate = gateEntity({ kind: 'plan', plan: identity, quorum: 1 }, facts, []);
    expect(planGate.attrs).toMatchObject({ steps: ['ping', 'pods'], hosts: ['api.prod.example.com'] });
  });
});

describe('the schema is the one model the entities are built from, and it is documented', () => {
  const facts = planFacts(
    PlanSchema.parse({
      id: 'p',
      objective: 'Echo one value',
      sizePolicy: { minSteps: 1 },
      steps: [{ id: 's', description: 'Echo', tool: 'echo', args: { message: 'hi' } }],
    }),
  );
  const shapes = POLICY_SCHEMA[''].entityTypes as Record<
    string,
    { shape?: { attributes: Record<string, unknown> } }
  >;
  const built = {
    Plan: planEntity(identity, facts),
    Step: stepEntity(identity, 's', facts.steps.s),
    Gate: gateEntity({ kind: 'plan', plan: identity, quorum: 1 }, facts, []),
  };

  it('every entity carries exactly the attributes of its schema type', () => {
    for (const [type, entity] of Object.entries(built))
      expect([type, Object.keys(entity.attrs).sort()]).toEqual([
        type,
        Object.keys(shapes[type]?.shape?.attributes ?? {}).sort(),
      ]);
  });

  it('docs/policy.md names every attribute of every entity', async () => {
    const doc = await readFile(new URL('../../docs/policy.md', import.meta.url), 'utf8');
    for (const [type, { shape }] of Object.entries(shapes))
      for (const name of Object.keys(shape?.attributes ?? {}))
        expect([type, name, doc.includes(name)]).toEqual([type, name, true]);
  });

  it('policy validate refuses a rule naming an attribute that does not exist', async () => {
    for (const rule of [
      'permit (principal, action, resource is Step) when { resource.program == "kubectl" };',
      'permit (principal, action, resource is Plan) when { resource.approval.escalation > 1 };',
      'permit (principal, action, resource is Gate) when { resource.host == "x" };',
      'permit (principal, action == Action::"Deploy", resource);',
      'permit (principal, action, resource is Step) when { resource.hosts == "x" };',
    ])
      await expect(policySet(rule), rule).rejects.toBeInstanceOf(PolicyLoadError);
  });
});
