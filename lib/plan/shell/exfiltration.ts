/**
 * Outbound data flows: what a command sends away (an upload, a pipe into a network client, a copy
 * to a remote host) and credential files it reads (`~/.ssh`, `~/.aws`, `/etc/shadow`, `.env`).
 * Marked as exfiltration risks at the gate, whatever the command's class; a plan with one is never
 * approved unattended. Tables: one row a line; tests/plan/shell-tables.test.ts runs each.
 */
import { optionValue, scanOptions } from './options.ts';
import type { ShellWord } from './words.ts';

/** Paths of credentials, matched on a path as written (`~/.ssh/id_rsa`, `$HOME/.aws/credentials`). */
export const CREDENTIAL_PATHS: readonly (readonly [RegExp, string])[] = [
  [/(?:^|\/|~)\.ssh(?:\/|$)/, 'SSH keys'],
  [/(?:^|\/|~)\.aws(?:\/|$)/, 'AWS credentials'],
  [/(?:^|\/|~)\.gnupg(?:\/|$)/, 'GnuPG keys'],
  [/(?:^|\/|~)\.kube\/config$/, 'Kubernetes credentials'],
  [/(?:^|\/|~)\.docker\/config\.json$/, 'Docker registry credentials'],
  [/(?:^|\/|~)\.config\/gcloud(?:\/|$)/, 'Google Cloud credentials'],
  [/(?:^|\/|~)\.azure(?:\/|$)/, 'Azure credentials'],
  [/(?:^|\/|~)\.(?:netrc|pgpass|npmrc|pypirc|git-credentials)$/, 'stored passwords or tokens'],
  [/^\/etc\/(?:shadow|gshadow|sudoers)/, 'system password hashes'],
  [/(?:^|\/)\.env(?:\.[\w.-]+)?$/, 'environment secrets (.env)'],
  [/(?:^|\/)id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?$/, 'SSH keys'],
  [/^\/proc\/(?:\d+|self)\/environ$/, "a process's environment"],
  [/^\/(?:var\/)?run\/secrets(?:\/|$)/, 'mounted secrets'],
];

/** Which credentials a path names, or undefined. */
export function credentialPath(path: string): string | undefined {
  return CREDENTIAL_PATHS.find(([pattern]) => pattern.test(path))?.[1];
}

/** Programs that send what they read on standard input over the network. */
export const NETWORK_SENDERS: ReadonlySet<string> = new Set([
  'nc',
  'ncat',
  'netcat',
  'socat',
  'telnet',
  'ssh',
  'openssl',
  'mail',
  'mailx',
  'sendmail',
]);

/** `host:path` or `user@host:path` (scp, rsync); not `./a:b`, not a URL. */
const REMOTE_PATH = /^(?:[\w.-]+@)?[\w.-]+:(?!\/\/)/;

const isPath = (value: string) => value !== '' && !value.startsWith('-');

/** Why a word names a credential file, for a command that reads it. */
function credentialWords(args: readonly ShellWord[]): string[] {
  return args.flatMap((word) => {
    const path = word.value ?? word.text.replace(/^\$\{?HOME\}?/, '~');
    const what = credentialPath(path);
    return what ? [`reads ${what} (\`${word.raw}\`)`] : [];
  });
}

/** Uploads: `curl -T`, `-d @file`, `-F x=@file`; `wget --post-file`; `scp`/`rsync` to a remote host. */
function uploads(name: string, args: readonly ShellWord[], readsPipe: boolean): string[] {
  const found: string[] = [];
  if (name === 'curl') {
    const scanned = scanOptions(args, {
      shortWithValue: 'XodHuAbcCeEFKmrTwxyzU',
      longWithValue: [
        'upload-file',
        'data',
        'data-binary',
        'data-raw',
        'data-urlencode',
        'form',
        'json',
        'request',
      ],
    });
    const upload = optionValue(scanned, 'T', 'upload-file');
    if (upload)
      found.push(
        `uploads ${upload.value === '-' || upload.value === '.' ? 'its input' : `\`${upload.raw}\``} (curl -T)`,
      );
    for (const name of ['data', 'data-binary', 'data-urlencode', 'json']) {
      const value = scanned.long.get(name);
      if (value !== undefined && value !== true && value.value?.includes('@'))
        found.push(`sends the file \`${value.raw}\` (curl --${name})`);
    }
    const short = optionValue(scanned, 'd');
    if (short?.value?.startsWith('@')) found.push(`sends the file \`${short.raw}\` (curl -d)`);
    const form = optionValue(scanned, 'F', 'form');
    if (form?.value && /=[@<]/.test(form.value)) found.push(`uploads the file in \`${form.raw}\` (curl -F)`);
  }
  if (name === 'wget') {
    const scanned = scanOptions(args, { longWithValue: ['post-file', 'body-file'] });
    for (const option of ['post-file', 'body-file']) {
      const value = scanned.long.get(option);
      if (value !== undefined && value !== true)
        found.push(`sends the file \`${value.raw}\` (wget --${option})`);
    }
  }
  if (name === 'scp' || name === 'rsync' || name === 'sftp') {
    const operands = scanOptions(args, { shortWithValue: name === 'scp' ? 'cFiJlosPS' : 'eBfT' }).operands;
    const target = operands.at(-1)?.value;
    const sources = operands.slice(0, -1);
    if (target !== undefined && REMOTE_PATH.test(target) && sources.some((w) => isPath(w.value ?? '')))
      found.push(`copies files to the remote \`${target}\``);
  }
  if ((name === 'aws' || name === 'gsutil') && hasUploadTarget(args))
    found.push(`uploads files to ${name === 'aws' ? 'S3' : 'Cloud Storage'}`);
  if (readsPipe && NETWORK_SENDERS.has(name)) found.push(`sends its input over the network (\`${name}\`)`);
  if (readsPipe && (name === 'http' || name === 'https' || name === 'xh'))
    found.push(`sends its input over the network (\`${name}\`)`);
  return found;
}

/** `aws s3 cp|mv|sync LOCAL s3://…`, `gsutil cp LOCAL gs://…`: a local source and a bucket target. */
function hasUploadTarget(args: readonly ShellWord[]): boolean {
  const operands = scanOptions(args, {
    longWithValue: ['region', 'profile', 'exclude', 'include'],
  }).operands.map((w) => w.value ?? '');
  const verb = operands.findIndex((v) => ['cp', 'mv', 'sync', 'rsync'].includes(v));
  if (verb < 0) return false;
  const [source, target] = operands.slice(verb + 1);
  return (
    source !== undefined &&
    target !== undefined &&
    /^(?:s3|gs):\/\//.test(target) &&
    !/^(?:s3|gs):\/\//.test(source)
  );
}

/**
 * What `name args` sends away or reads of credentials. `readsPipe`: its standard input is the
 * output of another command (`tar cz ~/.ssh | curl -T - …`).
 */
export function exfiltrationReasons(name: string, args: readonly ShellWord[], readsPipe: boolean): string[] {
  const printsOnly = name === 'echo' || name === 'printf';
  return [...(printsOnly ? [] : credentialWords(args)), ...uploads(name, args, readsPipe)];
}

/** A redirect to a network socket (`> /dev/tcp/host/port`), or a read of credentials (`< ~/.aws/credentials`). */
export function redirectExfiltration(operator: string, target: ShellWord): string | undefined {
  const path = target.value ?? target.text.replace(/^\$\{?HOME\}?/, '~');
  if (/^\/dev\/(?:tcp|udp)\//.test(path)) return `sends data over the network (\`${target.raw}\`)`;
  const what = operator.includes('<') ? credentialPath(path) : undefined;
  return what ? `reads ${what} (\`${target.raw}\`)` : undefined;
}
