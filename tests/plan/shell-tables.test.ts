// biome-ignore-all lint/suspicious/noTemplateCurlyInString: shell variables are written as ${...}
/**
 * The shell analysis's rule tables, row by row: every wrapper runs `rm -rf` and `ls` through, every
 * read-only program's example is proven read-only, every interpreter's code is unknown and its
 * `system(…)` text is read, every variable that changes what runs makes a command unknown, every
 * credential path and code deletion is caught. A row added without its example here fails the
 * "has an example" test: adding a rule is one line there and one line here.
 */
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_PATHS } from '../../lib/plan/shell/exfiltration.ts';
import { analyzeShell, type ShellEffect } from '../../lib/plan/shell/index.ts';
import { CODE_DELETIONS, INTERPRETERS } from '../../lib/plan/shell/interpreters.ts';
import { READ_ONLY_PROGRAMS } from '../../lib/plan/shell/read-only.ts';
import { EXECUTION_VARIABLES } from '../../lib/plan/shell/variables.ts';
import { WRAPPERS } from '../../lib/plan/shell/wrappers.ts';

/** Per wrapper: how a command runs through it (`%s`), and the class of `ls` run that way. */
const WRAPPER_EXAMPLES: Readonly<Record<string, readonly [string, ShellEffect]>> = {
  sh: ["sh -c '%s'", 'read-only'],
  bash: ["bash -ec '%s'", 'read-only'],
  zsh: ["zsh -c '%s'", 'read-only'],
  dash: ["dash -c '%s'", 'read-only'],
  ksh: ["ksh -c '%s'", 'read-only'],
  ash: ["ash -c '%s'", 'read-only'],
  mksh: ["mksh -c '%s'", 'read-only'],
  yash: ["yash -c '%s'", 'read-only'],
  command: ['command %s', 'read-only'],
  builtin: ['builtin %s', 'read-only'],
  exec: ['exec -a name %s', 'read-only'],
  nohup: ['nohup %s', 'read-only'],
  setsid: ['setsid %s', 'read-only'],
  coproc: ['coproc %s', 'read-only'],
  time: ['time -p %s', 'read-only'],
  nice: ['nice -n 10 %s', 'read-only'],
  timeout: ['timeout -s KILL 5 %s', 'read-only'],
  stdbuf: ['stdbuf -oL %s', 'read-only'],
  ionice: ['ionice -c 3 %s', 'read-only'],
  taskset: ['taskset -c 0 %s', 'read-only'],
  chrt: ['chrt -f 10 %s', 'read-only'],
  prlimit: ['prlimit --nofile=64 %s', 'read-only'],
  numactl: ['numactl -N 0 %s', 'read-only'],
  cgexec: ['cgexec -g cpu:low %s', 'read-only'],
  faketime: ["faketime '2020-01-01' %s", 'read-only'],
  fakeroot: ['fakeroot -- %s', 'read-only'],
  eatmydata: ['eatmydata %s', 'read-only'],
  catchsegv: ['catchsegv %s', 'read-only'],
  unbuffer: ['unbuffer %s', 'read-only'],
  linux32: ['linux32 %s', 'read-only'],
  linux64: ['linux64 %s', 'read-only'],
  setarch: ['setarch x86_64 %s', 'read-only'],
  busybox: ['busybox %s', 'read-only'],
  xargs: ['echo a | xargs -n1 %s', 'read-only'],
  watch: ['watch -n 5 %s', 'read-only'],
  parallel: ["parallel '%s' ::: a b", 'read-only'],
  env: ['env A=1 %s', 'read-only'],
  trap: ["trap '%s' EXIT", 'read-only'],
  eval: ["eval '%s'", 'read-only'],
  alias: ["alias x='%s'", 'read-only'],
  hash: ['hash -p /bin/rm ls; %s', 'destructive'],
  source: ['source ./env.sh; %s', 'destructive'],
  '.': ['. ./env.sh; %s', 'destructive'],
  strace: ['strace -o trace.txt %s', 'unknown'],
  ltrace: ['ltrace %s', 'unknown'],
  valgrind: ['valgrind %s', 'unknown'],
  script: ["script -q -c '%s' /dev/null", 'unknown'],
  flock: ["flock /tmp/x.lock -c '%s'", 'unknown'],
  chroot: ['chroot /srv/jail %s', 'unknown'],
  unshare: ['unshare -r %s', 'unknown'],
  nsenter: ['nsenter -t 1 -m %s', 'unknown'],
  'systemd-run': ['systemd-run --user %s', 'unknown'],
  sudo: ['sudo -u deploy %s', 'unknown'],
  doas: ['doas %s', 'unknown'],
  pkexec: ['pkexec %s', 'unknown'],
  su: ["su -c '%s' deploy", 'unknown'],
  runuser: ['runuser -u deploy -- %s', 'unknown'],
  sg: ["sg staff -c '%s'", 'unknown'],
  ssh: ["ssh host '%s'", 'unknown'],
  npx: ['npx %s', 'unknown'],
  bunx: ['bunx %s', 'unknown'],
  uv: ['uv run %s', 'unknown'],
  poetry: ['poetry run %s', 'unknown'],
  pipenv: ['pipenv run %s', 'unknown'],
  bundle: ['bundle exec %s', 'unknown'],
  find: ['find . -exec %s {} +', 'read-only'],
  docker: ['docker exec db %s', 'unknown'],
  podman: ['podman exec db %s', 'unknown'],
  kubectl: ['kubectl exec db -- %s', 'unknown'],
  npm: ['npm exec %s', 'unknown'],
  pnpm: ['pnpm dlx %s', 'unknown'],
  yarn: ['yarn dlx %s', 'unknown'],
};

/** Per read-only program: a command line proven read-only. */
const READ_ONLY_EXAMPLES: Readonly<Record<string, string>> = {
  ':': ':',
  true: 'true',
  false: 'false || true',
  echo: 'echo hello',
  printf: "printf '%s\\n' a",
  test: 'test -f out.txt',
  '[': '[ -d build ]',
  cd: 'cd src',
  pushd: 'pushd src',
  popd: 'popd',
  pwd: 'pwd',
  set: 'set -euo pipefail',
  shift: 'shift',
  exit: 'exit 0',
  return: 'return 0',
  break: 'break',
  continue: 'continue',
  wait: 'wait',
  read: 'read -r line',
  getopts: 'getopts ab opt',
  type: 'type git',
  command: 'command -v node',
  unset: 'unset x',
  hash: 'hash -r',
  shopt: 'shopt -s nullglob',
  sleep: 'sleep 1',
  ls: 'ls -la',
  cat: 'cat README.md',
  head: 'head -n 5 log.txt',
  tail: 'tail -n 5 log.txt',
  wc: 'wc -l data.csv',
  nl: 'nl notes.txt',
  stat: 'stat -c %s f',
  file: 'file app',
  du: 'du -sh build',
  df: 'df -h',
  tree: 'tree -L 2',
  find: "find . -name '*.ts'",
  realpath: 'realpath .',
  readlink: 'readlink -f link',
  basename: 'basename a/b.txt',
  dirname: 'dirname a/b.txt',
  md5sum: 'md5sum f',
  sha1sum: 'sha1sum f',
  sha256sum: 'sha256sum f',
  sha512sum: 'sha512sum f',
  b2sum: 'b2sum f',
  cksum: 'cksum f',
  od: 'od -c f',
  hexdump: 'hexdump -C f',
  xxd: 'xxd f',
  strings: 'strings app',
  cmp: 'cmp a b',
  diff: 'diff -u a b',
  comm: 'comm a b',
  grep: 'grep -rn TODO src',
  egrep: "egrep 'a|b' f",
  fgrep: 'fgrep x f',
  zgrep: 'zgrep x f.gz',
  rg: 'rg -n TODO',
  sort: 'sort -u names.txt',
  uniq: 'uniq -c sorted.txt',
  cut: 'cut -d, -f1 data.csv',
  tr: 'tr a-z A-Z < f',
  paste: 'paste -sd+ numbers.txt',
  join: 'join a b',
  column: 'column -t f',
  fold: 'fold -w 80 f',
  fmt: 'fmt f',
  rev: 'rev f',
  tac: 'tac f',
  expand: 'expand f',
  unexpand: 'unexpand f',
  seq: 'seq 1 10',
  yes: 'yes | head -n 1',
  base64: 'base64 f',
  jq: "jq '.version' package.json",
  yq: "yq '.a' f.yaml",
  sed: "sed -n '1,5p' f",
  awk: "awk '{ print $1 }' f",
  gawk: "gawk '{ print $1 }' f",
  mawk: "mawk '{ print $1 }' f",
  nawk: "nawk '{ print $1 }' f",
  whoami: 'whoami',
  id: 'id -u',
  groups: 'groups',
  uname: 'uname -a',
  hostname: 'hostname -f',
  date: 'date +%Y-%m-%d',
  printenv: 'printenv HOME',
  which: 'which node',
  uptime: 'uptime',
  nproc: 'nproc',
  free: 'free -m',
  ps: 'ps aux',
  tty: 'tty',
  locale: 'locale',
  git: 'git log --oneline -5',
  curl: 'curl -fsSL https://example.com/health',
  wget: 'wget -qO- https://example.com',
  kubectl: 'kubectl -n prod get pods',
  docker: 'docker ps -a',
  npm: 'npm ls --depth 0',
};

/** Per interpreter: how it is given code (`%s`). */
const INTERPRETER_EXAMPLES: Readonly<Record<string, string>> = {
  python: "python -c '%s'",
  python3: "python3 -c '%s'",
  python2: "python2 -c '%s'",
  pypy3: "pypy3 -c '%s'",
  node: "node -e '%s'",
  nodejs: "nodejs --eval '%s'",
  bun: "bun -e '%s'",
  deno: "deno --eval '%s'",
  perl: "perl -e '%s'",
  ruby: "ruby -e '%s'",
  php: "php -r '%s'",
  lua: "lua -e '%s'",
  Rscript: "Rscript -e '%s'",
  osascript: "osascript -e '%s'",
  pwsh: "pwsh -c '%s'",
  tclsh: 'tclsh script.tcl %s',
};

const CREDENTIAL_EXAMPLES: readonly string[] = [
  '~/.ssh/id_ed25519',
  '~/.aws/credentials',
  '~/.gnupg/secring.gpg',
  '~/.kube/config',
  '~/.docker/config.json',
  '~/.config/gcloud/credentials.db',
  '~/.azure/accessTokens.json',
  '~/.netrc',
  '/etc/shadow',
  '.env.production',
  'keys/id_rsa',
  '/proc/self/environ',
  '/run/secrets/db',
];

const CODE_DELETION_EXAMPLES: readonly string[] = [
  'shutil.rmtree("out")',
  'remove_tree("out")',
  'os.remove("f")',
  'Path("f").unlink()',
  'fs.rmSync("out", { recursive: true })',
  'rmSync("out")',
  'FileUtils.rm_rf("out")',
  'File.delete("f")',
  'unlink glob "*.log"',
];

const run = (template: string, command: string) => template.replace('%s', command);

describe('wrappers (wrappers.ts WRAPPERS)', () => {
  it('has an example for every wrapper', () => {
    expect([...WRAPPERS.keys()].filter((name) => WRAPPER_EXAMPLES[name] === undefined)).toEqual([]);
  });

  it.each(Object.entries(WRAPPER_EXAMPLES))(
    '%s: rm -rf through it is destructive, ls is as it says',
    (_, example) => {
      const [template, lsEffect] = example;
      expect(analyzeShell(run(template, 'rm -rf out')).effect).toBe('destructive');
      const ls = analyzeShell(run(template, 'ls'));
      expect(ls.effect, [...ls.destructive, ...ls.unknown].map((f) => f.reason).join(' | ')).toBe(lsEffect);
    },
  );
});

describe('read-only programs (read-only.ts READ_ONLY_PROGRAMS)', () => {
  it('has an example for every program', () => {
    expect([...READ_ONLY_PROGRAMS.keys()].filter((name) => READ_ONLY_EXAMPLES[name] === undefined)).toEqual(
      [],
    );
  });

  it.each(Object.entries(READ_ONLY_EXAMPLES))('%s: %s is proven read-only', (_, command) => {
    const analysis = analyzeShell(command);
    expect(analysis.effect, analysis.unknown.map((f) => f.reason).join(' | ')).toBe('read-only');
  });

  it.each([
    ['sort -o out.txt in.txt', 'sort -o'],
    ['uniq in.txt out.txt', 'uniq'],
    ['xxd -r dump bin', 'xxd -r'],
    ['tree -o out.txt', 'tree -o'],
    ['yq -i .a=1 f.yaml', 'yq -i'],
    ["sed -i 's/a/b/' f", 'sed -i'],
    ["sed 's/a/b/w out' f", 'sed'],
    ['awk \'BEGIN { print "x" > "f" }\'', 'awk'],
    ['date 010100002020', 'sets the clock'],
    ['hostname evil', 'sets the host name'],
    ['curl -K cfg https://x', 'curl -K'],
    ['curl -X PUT https://x', 'curl -X PUT'],
    ['wget https://x', 'wget'],
    ['git push origin main', 'git push'],
    ['git stash', 'git stash'],
    ["git config user.name 'x'", 'changes the configuration'],
    ['git tag v1', 'creates a tag'],
    ['git remote add o url', 'git remote add'],
    ['kubectl delete pod x', 'deletes Kubernetes'],
    ['docker run app', 'docker run'],
    ['npm install', 'npm install'],
    ['find . -fls out', 'find -fls'],
    ['rg --pre ./x TODO', 'rg --pre'],
    ['printf -v PATH %s ./bin', 'sets PATH'],
    ['sort $OPTS names.txt', 'known only at run time'],
  ])('%s is not read-only (%s)', (command, reason) => {
    const analysis = analyzeShell(command);
    expect(analysis.effect).not.toBe('read-only');
    expect(
      [...analysis.destructive, ...analysis.unknown].some((f) => f.reason.includes(reason)),
      [...analysis.destructive, ...analysis.unknown].map((f) => f.reason).join(' | '),
    ).toBe(true);
  });
});

describe('interpreters (interpreters.ts INTERPRETERS)', () => {
  it('has an example for every interpreter', () => {
    expect([...INTERPRETERS.keys()].filter((name) => INTERPRETER_EXAMPLES[name] === undefined)).toEqual([]);
  });

  it.each(Object.entries(INTERPRETER_EXAMPLES))(
    '%s: its code is of unknown effect, its system("rm -rf") destructive',
    (name, template) => {
      const plain = analyzeShell(run(template, 'print 1'));
      expect(plain.effect).toBe('unknown');
      expect(plain.unknown.some((f) => f.reason.includes(`\`${name}\``))).toBe(true);
      if (template.includes("'%s'"))
        expect(analyzeShell(run(template, 'system("rm -rf out")')).effect).toBe('destructive');
    },
  );

  it('has an example for every code deletion, each destructive', () => {
    expect(CODE_DELETION_EXAMPLES).toHaveLength(CODE_DELETIONS.length);
    CODE_DELETIONS.forEach(([pattern], i) => {
      const code = CODE_DELETION_EXAMPLES[i] ?? '';
      expect(pattern.test(code), `${pattern} on ${code}`).toBe(true);
      expect(analyzeShell(`node -e '${code}'`).effect).toBe('destructive');
    });
  });
});

describe('variables that change what runs (variables.ts)', () => {
  it.each([...EXECUTION_VARIABLES.keys(), 'LD_AUDIT', 'DYLD_INSERT_LIBRARIES', 'GIT_CONFIG_COUNT'])(
    '%s=… makes a command of unknown effect, whichever way it is set',
    (name) => {
      for (const command of [
        `${name}=./x ls`,
        `export ${name}=./x; ls`,
        `env ${name}=./x ls`,
        `${name}=./x`,
      ]) {
        const analysis = analyzeShell(command);
        expect(analysis.effect, command).toBe('unknown');
        expect(
          analysis.unknown.some((f) => f.reason.startsWith(`sets ${name} `)),
          command,
        ).toBe(true);
      }
    },
  );

  it('leaves other variables alone', () => {
    expect(analyzeShell('NODE_ENV=test FOO=1 ls').effect).toBe('read-only');
  });
});

describe('credential paths (exfiltration.ts CREDENTIAL_PATHS)', () => {
  it('has an example for every path, each read marked as exfiltration', () => {
    expect(CREDENTIAL_EXAMPLES).toHaveLength(CREDENTIAL_PATHS.length);
    CREDENTIAL_PATHS.forEach(([pattern], i) => {
      const path = CREDENTIAL_EXAMPLES[i] ?? '';
      expect(pattern.test(path), `${pattern} on ${path}`).toBe(true);
      expect(analyzeShell(`cat ${path}`).exfiltration, path).toHaveLength(1);
    });
  });

  it('does not take what echo prints for a read', () => {
    expect(analyzeShell('echo ~/.ssh/id_rsa').exfiltration).toEqual([]);
  });
});
