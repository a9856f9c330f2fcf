/**
 * Which commands change or delete something that is hard to undo, by command name and arguments.
 * The rules, each with its reason (the gate and the validator show it):
 *
 * - deleting files: `rm` (any `rm`, not only `-r`/`-f`: it deletes), `unlink`, `shred`, `srm`,
 *   `rimraf`, `find … -delete`, `truncate`; `rmdir` is not (it removes only empty directories);
 * - disks: `mkfs*`, `mke2fs`, `mkswap`, `wipefs`, partition editors (unless listing), `dd of=…`, and
 *   writing to a block device (`> /dev/sda`, `tee /dev/nvme0n1`, `cp img /dev/sdb`);
 * - git: `push --force`/`-f`/`--force-with-lease`/`+refspec`, `push --delete`/`:ref`/`--mirror`/
 *   `--prune`, `reset --hard`, `clean -f` (not with `-n`), `branch -D`;
 * - SQL `DROP TABLE|DATABASE|SCHEMA` and `TRUNCATE TABLE` in the arguments or the here-document of
 *   any command except text tools (`echo "DROP TABLE x"` only prints); `dropdb`, `dropuser`,
 *   `mysqladmin drop`, `redis-cli FLUSHALL|FLUSHDB`;
 * - infrastructure: `kubectl delete`, `helm uninstall`, `terraform`/`tofu destroy`,
 *   `apply -auto-approve`/`-destroy`, `state rm`, `workspace delete`, `pulumi destroy`, `cdk destroy`,
 *   `aws <service> delete-*|remove-*|terminate-*|deregister-*|purge-*`, `aws s3 rm|rb`,
 *   `aws s3 sync --delete`, `gsutil rm|rb`, `gcloud … delete`, `az … delete`, `gh <thing> delete`,
 *   an HTTP DELETE (`curl -X DELETE`, `wget --method=DELETE`, `http DELETE`, `gh api -X DELETE`);
 * - containers: `docker|podman rm -f|-v`, `volume rm|prune`, `system prune`, `compose down -v`;
 * - system: `chmod|chown|chgrp -R` on `/` or a top-level system directory or `~`, `rsync --delete*`
 *   or `--remove-source-files`, `crontab -r`, `userdel`/`groupdel`, `npm unpublish`.
 *
 * - git history: `reflog expire`, `gc --prune=now`, `prune`, `filter-branch|filter-repo`,
 *   `update-ref -d`, `stash drop|clear`, `tag -d`; SQL also `DROP VIEW|INDEX|…`, `DELETE FROM`,
 *   `ALTER TABLE … DROP` (comments read as spaces); emptying a file by `cp /dev/null f`.
 *
 * Not destructive (their effect is unknown, read-only.ts decides what is proven read-only):
 * writing or overwriting ordinary files (`>`, `cp`, `mv`, `sed -i`, `tar -x`), `rmdir`, `kill`,
 * `docker rmi`, `git checkout`/`restore`, `make clean` or `npm run clean` (what a script or a
 * Makefile runs is not in the plan's text). Emptying by a redirect (`: > f`) is analyze.ts's;
 * code in other languages, interpreters.ts's.
 */
import { hasOption, optionValue, scanOptions } from './options.ts';
import type { ShellWord } from './words.ts';

type Rule = (args: readonly ShellWord[]) => string | undefined;

const always =
  (reason: string): Rule =>
  () =>
    reason;

const values = (words: readonly ShellWord[]): string[] => words.map((word) => word.value ?? '');

const BLOCK_DEVICE =
  /^\/dev\/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper\/|loop\d|nbd\d|zd\d|disk\/)/;

/** A path of a disk or partition device: writing to it destroys the filesystem on it. */
export function isBlockDevice(path: string): boolean {
  return BLOCK_DEVICE.test(path);
}

/**
 * SQL statements that delete data or schema: `DROP <object>`, `TRUNCATE`, `DELETE FROM`,
 * `ALTER TABLE … DROP`; and MongoDB's `dropDatabase()`, `.drop()`, `deleteMany(…)`.
 */
const SQL_DESTRUCTIVE =
  /\b(drop\s+(?:table|database|schema|view|materialized\s+view|index|user|role|function|procedure|trigger|sequence|keyspace|owned)|truncate\s+table|delete\s+from|alter\s+table\s+\S+\s+drop)\b|\b(truncate)\s+[\w.]+\s*;|\b(dropDatabase|deleteMany)\s*\(|\.(drop)\s*\(\s*\)/i;

/** SQL with its comments (`/* … *\/`, `-- …`) read as the spaces they stand for. */
function withoutSqlComments(text: string): string {
  return text.includes('/*') || text.includes('--')
    ? text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/--[^\n]*/g, ' ')
    : text;
}

/** The destructive SQL statement in a text, e.g. `DROP TABLE`, or undefined. */
export function destructiveSql(text: string): string | undefined {
  const match = SQL_DESTRUCTIVE.exec(withoutSqlComments(text));
  if (!match) return undefined;
  const statement = (match[1] ?? match[2] ?? match[3] ?? match[4] ?? '').toUpperCase().replace(/\s+/g, ' ');
  return statement.startsWith('ALTER TABLE') ? 'ALTER TABLE … DROP' : statement;
}

/** Commands whose arguments and input are only text or file names: SQL in them is never run. */
export const TEXT_COMMANDS: ReadonlySet<string> = new Set([
  'echo',
  'printf',
  'cat',
  'tee',
  'grep',
  'egrep',
  'fgrep',
  'zgrep',
  'rg',
  'ag',
  'ack',
  'sed',
  'awk',
  'gawk',
  'jq',
  'yq',
  'git',
  'logger',
  'test',
  '[',
  'true',
  'false',
  ':',
  'wc',
  'head',
  'tail',
  'sort',
  'uniq',
  'cut',
  'tr',
  'diff',
  'cmp',
  'touch',
  'mkdir',
  'ls',
  'stat',
  'file',
]);

const SYSTEM_DIRECTORIES = new Set([
  '/',
  '/*',
  '~',
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/home',
  '/lib',
  '/lib64',
  '/opt',
  '/proc',
  '/root',
  '/sbin',
  '/srv',
  '/sys',
  '/usr',
  '/var',
]);

const rm: Rule = (args) =>
  hasOption(scanOptions(args), 'rR', ['recursive']) ? 'deletes recursively' : 'deletes files';

const find: Rule = (args) =>
  args.some((word) => word.value === '-delete') ? 'deletes the files it finds (-delete)' : undefined;

const dd: Rule = (args) => {
  const target = args.find((word) => word.value?.startsWith('of='));
  return target ? `writes raw data to ${target.value!.slice(3)}` : undefined;
};

const partitioner: Rule = (args) =>
  values(args).some((v) => ['-l', '--list', '-p', '--print', 'print'].includes(v))
    ? undefined
    : 'rewrites a partition table';

const git: Rule = (args) => {
  const global = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'Cc',
    longWithValue: ['git-dir', 'work-tree', 'namespace', 'config-env'],
  });
  const [subcommand, ...rest] = global.operands;
  switch (subcommand?.value) {
    case 'push': {
      const push = scanOptions(rest, {
        shortWithValue: 'o',
        longWithValue: ['repo', 'push-option', 'receive-pack', 'exec'],
      });
      const refspecs = values(push.operands.slice(1));
      if (
        hasOption(push, 'f', ['force', 'force-with-lease', 'force-if-includes']) ||
        refspecs.some((r) => r.startsWith('+'))
      )
        return 'force-pushes, rewriting remote history';
      if (hasOption(push, 'd', ['delete']) || refspecs.some((r) => r.startsWith(':')))
        return 'deletes remote branches or tags';
      if (hasOption(push, '', ['mirror', 'prune'])) return 'deletes remote refs that do not exist locally';
      return undefined;
    }
    case 'reset':
      return hasOption(scanOptions(rest), '', ['hard']) ? 'discards uncommitted changes' : undefined;
    case 'reflog': {
      const verb = values(rest)[0];
      return verb === 'expire' || verb === 'delete'
        ? 'drops reflog entries, the way back to discarded commits'
        : undefined;
    }
    case 'gc': {
      const prune = scanOptions(rest).long.get('prune');
      return prune !== undefined && prune !== true && ['now', 'all'].includes(prune.value ?? '')
        ? 'deletes unreachable commits now (gc --prune=now)'
        : undefined;
    }
    case 'prune':
      return 'deletes unreachable objects';
    case 'filter-branch':
    case 'filter-repo':
      return 'rewrites history';
    case 'update-ref':
      return hasOption(scanOptions(rest), 'd') ? 'deletes a ref' : undefined;
    case 'stash': {
      const verb = values(rest)[0];
      return verb === 'drop' || verb === 'clear' ? 'deletes stashed changes' : undefined;
    }
    case 'tag':
      return hasOption(scanOptions(rest), 'd', ['delete']) ? 'deletes tags' : undefined;
    case 'clean': {
      const clean = scanOptions(rest, { shortWithValue: 'e', longWithValue: ['exclude'] });
      return hasOption(clean, 'f', ['force']) && !hasOption(clean, 'n', ['dry-run'])
        ? 'deletes untracked files'
        : undefined;
    }
    case 'branch': {
      const branch = scanOptions(rest);
      return hasOption(branch, 'D') ||
        (hasOption(branch, 'd', ['delete']) && hasOption(branch, 'f', ['force']))
        ? 'deletes a branch, merged or not'
        : undefined;
    }
    default:
      return undefined;
  }
};

const kubectl: Rule = (args) => {
  const [subcommand] = scanOptions(args, {
    shortWithValue: 'nsflocL',
    longWithValue: ['namespace', 'context', 'cluster', 'kubeconfig', 'server', 'user', 'token', 'selector'],
  }).operands;
  return subcommand?.value === 'delete' ? 'deletes Kubernetes resources' : undefined;
};

const helm: Rule = (args) => {
  const [subcommand] = scanOptions(args, {
    shortWithValue: 'n',
    longWithValue: ['namespace', 'kube-context', 'kubeconfig'],
  }).operands;
  return ['uninstall', 'delete', 'del', 'un'].includes(subcommand?.value ?? '')
    ? 'uninstalls a Helm release'
    : undefined;
};

const terraform: Rule = (args) => {
  const scanned = scanOptions(args, { singleDashLong: true });
  const [subcommand, object] = values(scanned.operands);
  const flag = (name: string) => {
    const value = scanned.long.get(name);
    return value === true || (value !== undefined && value.value !== 'false');
  };
  if (subcommand === 'destroy' || (subcommand === 'apply' && flag('destroy')))
    return 'destroys the infrastructure it manages';
  if (subcommand === 'apply' && flag('auto-approve'))
    return 'applies infrastructure changes without showing them for review (-auto-approve)';
  if (subcommand === 'state' && object === 'rm') return 'removes resources from the Terraform state';
  if (subcommand === 'workspace' && object === 'delete') return 'deletes a Terraform workspace';
  return undefined;
};

const pulumi: Rule = (args) => {
  const [subcommand, object] = values(
    scanOptions(args, { shortWithValue: 'sC', longWithValue: ['stack', 'cwd'] }).operands,
  );
  if (subcommand === 'destroy' || subcommand === 'down') return 'destroys the infrastructure it manages';
  if (subcommand === 'stack' && object === 'rm') return 'deletes a Pulumi stack';
  return undefined;
};

const cdk: Rule = (args) =>
  values(
    scanOptions(args, { shortWithValue: 'ac', longWithValue: ['app', 'context', 'profile', 'output'] })
      .operands,
  )[0] === 'destroy'
    ? 'deletes CloudFormation stacks'
    : undefined;

const AWS_GLOBAL_OPTIONS = [
  'region',
  'profile',
  'output',
  'endpoint-url',
  'query',
  'color',
  'ca-bundle',
  'cli-read-timeout',
  'cli-connect-timeout',
  'cli-binary-format',
];

const aws: Rule = (args) => {
  const global = scanOptions(args, { stopAtOperand: true, longWithValue: AWS_GLOBAL_OPTIONS });
  const [service, ...rest] = global.operands;
  const command = scanOptions(rest, { stopAtOperand: true, longWithValue: AWS_GLOBAL_OPTIONS });
  const [operation, ...operationArgs] = command.operands;
  const op = operation?.value ?? '';
  if (service?.value === 's3') {
    if (op === 'rm') return 'deletes S3 objects';
    if (op === 'rb') return 'deletes an S3 bucket';
    if (op === 'sync' && hasOption(scanOptions(operationArgs), '', ['delete']))
      return 'deletes S3 objects missing from the source (--delete)';
    return undefined;
  }
  const verb = /^(?:batch-)?(delete|remove|terminate|deregister|purge)-/.exec(op)?.[1];
  return verb ? `${verb}s AWS resources (${service?.value} ${op})` : undefined;
};

const gsutil: Rule = (args) => {
  const scanned = scanOptions(args, { stopAtOperand: true, shortWithValue: 'ohu' });
  const [subcommand, ...rest] = scanned.operands;
  if (subcommand?.value === 'rm' || subcommand?.value === 'rb')
    return 'deletes Cloud Storage objects or buckets';
  if (subcommand?.value === 'rsync' && hasOption(scanOptions(rest), 'd'))
    return 'deletes objects missing from the source (-d)';
  return undefined;
};

const cloudDelete =
  (cloud: string): Rule =>
  (args) =>
    scanOptions(args).operands.some((word) => word.value === 'delete')
      ? `deletes ${cloud} resources`
      : undefined;

const gh: Rule = (args) => {
  const scanned = scanOptions(args, {
    shortWithValue: 'RXfFHqtp',
    longWithValue: ['repo', 'method', 'field', 'raw-field', 'header', 'jq', 'template', 'input', 'hostname'],
  });
  const [group, verb] = values(scanned.operands);
  if (verb === 'delete') return `deletes on GitHub (gh ${group} delete)`;
  if (group === 'api' && optionValue(scanned, 'X', 'method')?.value?.toUpperCase() === 'DELETE')
    return 'sends an HTTP DELETE to the GitHub API';
  return undefined;
};

const HTTP_DELETE = 'sends an HTTP DELETE request';

const curl: Rule = (args) =>
  optionValue(
    scanOptions(args, { shortWithValue: 'XodHuAbcCeEFKmrTwxyzU', longWithValue: ['request'] }),
    'X',
    'request',
  )?.value?.toUpperCase() === 'DELETE'
    ? HTTP_DELETE
    : undefined;

const wget: Rule = (args) => {
  const method = scanOptions(args, { longWithValue: ['method'] }).long.get('method');
  return method !== undefined && method !== true && method.value?.toUpperCase() === 'DELETE'
    ? HTTP_DELETE
    : undefined;
};

const httpie: Rule = (args) =>
  scanOptions(args).operands[0]?.value?.toUpperCase() === 'DELETE' ? HTTP_DELETE : undefined;

const containers =
  (tool: string): Rule =>
  (args) => {
    const global = scanOptions(args, {
      stopAtOperand: true,
      shortWithValue: 'Hcl',
      longWithValue: ['host', 'context', 'config', 'log-level', 'tlscacert', 'tlscert', 'tlskey'],
    });
    const [first, ...rest] = global.operands;
    let subcommand = first?.value;
    let subArgs = rest;
    // `docker container rm`, `docker volume prune`: the object, then its verb.
    if (subcommand === 'container' && rest[0]) {
      subcommand = rest[0].value === 'remove' ? 'rm' : rest[0].value;
      subArgs = rest.slice(1);
    }
    if (subcommand === 'rm') {
      const rmOptions = scanOptions(subArgs);
      if (hasOption(rmOptions, 'f', ['force'])) return `force-removes ${tool} containers, running ones too`;
      if (hasOption(rmOptions, 'v', ['volumes'])) return `deletes ${tool} containers with their volumes`;
      return undefined;
    }
    const verb = rest[0]?.value;
    if (subcommand === 'volume' && ['rm', 'remove', 'prune'].includes(verb ?? ''))
      return `deletes ${tool} volumes and their data`;
    if (subcommand === 'system' && verb === 'prune')
      return `deletes unused ${tool} containers, images and networks`;
    if (subcommand === 'compose') return composeDown(rest);
    return undefined;
  };

function composeDown(args: readonly ShellWord[]): string | undefined {
  const scanned = scanOptions(args, {
    shortWithValue: 'fp',
    longWithValue: ['file', 'project-name', 'project-directory', 'profile', 'env-file'],
  });
  return scanned.operands[0]?.value === 'down' && hasOption(scanned, 'v', ['volumes'])
    ? "deletes the compose project's volumes and their data"
    : undefined;
}

const recursiveOnSystem =
  (what: string): Rule =>
  (args) => {
    const scanned = scanOptions(args, { longWithValue: ['reference', 'from'] });
    if (!hasOption(scanned, 'R', ['recursive'])) return undefined;
    const target = scanned.operands
      .map((word) => word.value ?? '')
      .find((path) => SYSTEM_DIRECTORIES.has(path.length > 1 ? path.replace(/\/+$/, '') : path));
    return target === undefined ? undefined : `changes ${what} of ${target} recursively`;
  };

const rsync: Rule = (args) => {
  const { long } = scanOptions(args, {
    shortWithValue: 'eBfT',
    longWithValue: ['rsh', 'filter', 'exclude', 'include'],
  });
  if ([...long.keys()].some((name) => name === 'del' || name.startsWith('delete')))
    return 'deletes files at the destination that the source lacks';
  if (long.has('remove-source-files')) return 'deletes the source files it copied';
  return undefined;
};

const writesDevice =
  (which: 'any' | 'last'): Rule =>
  (args) => {
    const operands = scanOptions(args).operands.map((word) => word.value ?? '');
    const targets = which === 'any' ? operands : operands.slice(-1);
    const device = targets.find(isBlockDevice);
    return device === undefined ? undefined : `writes to the block device ${device}`;
  };

/** `cp /dev/null file`: the file is emptied. */
function emptiesByCopy(args: readonly ShellWord[]): string | undefined {
  const operands = scanOptions(args, {
    shortWithValue: 'St',
    longWithValue: ['suffix', 'target-directory'],
  }).operands;
  const [source, ...targets] = values(operands);
  return source === '/dev/null' && targets.length > 0 ? `empties ${targets.join(', ')}` : undefined;
}

const RULES: ReadonlyMap<string, Rule> = new Map<string, Rule>([
  ['rm', rm],
  ['unlink', always('deletes a file')],
  ['shred', always('overwrites files so they cannot be recovered')],
  ['srm', always('securely deletes files')],
  ['rimraf', always('deletes recursively')],
  ['truncate', always('truncates files')],
  ['wipefs', always('erases filesystem signatures from a device')],
  ['mke2fs', always('creates a filesystem, erasing the device')],
  ['mkswap', always('formats a device as swap, erasing it')],
  ['fdisk', partitioner],
  ['sfdisk', partitioner],
  ['sgdisk', partitioner],
  ['gdisk', partitioner],
  ['cfdisk', partitioner],
  ['parted', partitioner],
  ['dd', dd],
  ['find', find],
  ['git', git],
  ['kubectl', kubectl],
  ['helm', helm],
  ['terraform', terraform],
  ['tofu', terraform],
  ['pulumi', pulumi],
  ['cdk', cdk],
  ['aws', aws],
  ['gsutil', gsutil],
  ['gcloud', cloudDelete('Google Cloud')],
  ['az', cloudDelete('Azure')],
  ['gh', gh],
  ['curl', curl],
  ['wget', wget],
  ['http', httpie],
  ['https', httpie],
  ['xh', httpie],
  ['docker', containers('Docker')],
  ['podman', containers('Podman')],
  ['docker-compose', composeDown],
  ['chmod', recursiveOnSystem('permissions')],
  ['chown', recursiveOnSystem('ownership')],
  ['chgrp', recursiveOnSystem('group ownership')],
  ['rsync', rsync],
  ['tee', writesDevice('any')],
  ['cp', (args) => emptiesByCopy(args) ?? writesDevice('last')(args)],
  ['mv', writesDevice('last')],
  ['install', writesDevice('last')],
  ['crontab', (args) => (hasOption(scanOptions(args), 'r') ? 'deletes the crontab' : undefined)],
  ['userdel', always('deletes a user account')],
  ['deluser', always('deletes a user account')],
  ['groupdel', always('deletes a group')],
  ['delgroup', always('deletes a group')],
  ['dropdb', always('deletes a PostgreSQL database')],
  ['dropuser', always('deletes a PostgreSQL role')],
  ['mysqladmin', (args) => (values(args).includes('drop') ? 'deletes a MySQL database' : undefined)],
  [
    'redis-cli',
    (args) =>
      values(args).some((v) => /^flush(?:all|db)$/i.test(v))
        ? 'deletes every key (FLUSHALL/FLUSHDB)'
        : undefined,
  ],
  [
    'npm',
    (args) =>
      scanOptions(args).operands[0]?.value === 'unpublish' ? 'removes a published package' : undefined,
  ],
]);

/**
 * Why `name args` is destructive, or undefined. `name` is the command's base name (`/bin/rm` → `rm`);
 * wrappers (`sudo`, `xargs`, …) are taken off before this is asked.
 */
export function destructiveReason(name: string, args: readonly ShellWord[]): string | undefined {
  if (
    name === 'mkfs' ||
    name.startsWith('mkfs.') ||
    name === 'mkdosfs' ||
    name === 'mkntfs' ||
    name === 'newfs'
  )
    return 'creates a filesystem, erasing the device';
  return RULES.get(name)?.(args);
}
