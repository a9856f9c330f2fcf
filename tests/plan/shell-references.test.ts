// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * placeShellReferences: each place a value is data (double-quoted, or a word the harness quotes),
 * each refused place with its reason, located; and the env names a plan may not set.
 */
import { describe, expect, it } from 'vitest';
import { codeRunningEnvName, placeShellReferences } from '../../lib/plan/shell/index.ts';

const R = '${steps.a.v}';

/** The verdict for the (only, or first) reference in `command`. */
function verdict(command: string): string {
  const [place] = placeShellReferences(command);
  if (!place) throw new Error(`no reference in ${command}`);
  return place.placement ?? `refused: ${place.refused}`;
}

describe('placeShellReferences: where a value is data', () => {
  it.each([
    [`printf '%s' "${R}"`, 'quoted'],
    [`echo "id=${R}."`, 'quoted'],
    [`grep -q "${R}" CHANGELOG.md`, 'quoted'],
    [`test -n "${R}"`, 'quoted'],
    [`[ "${R}" = x ]`, 'quoted'],
    [`[[ "${R}" == x && -f ${R} ]]`, 'quoted'],
    [`cmd --name="${R}"`, 'quoted'],
    [`echo "$(printf '%s' "${R}")"`, 'quoted'],
    [`x=$(cat "${R}")`, 'quoted'],
    [`export X="${R}"`, 'quoted'],
    [`f() { echo "${R}"; }; f`, 'quoted'],
    [`if true; then echo "${R}"; fi`, 'quoted'],
    [`echo "${R}" | grep -q x`, 'quoted'],
    [`sudo -u root printf '%s' "${R}"`, 'quoted'],
    [`env X="${R}" printf '%s' "$X"`, 'quoted'],
    [`timeout 5 printf '%s' "${R}"`, 'quoted'],
    [`bash -c 'printf %s "$1"' _ "${R}"`, 'quoted'],
    [`python3 -c 'import sys; print(sys.argv[1])' "${R}"`, 'quoted'],
    [`node -e 'console.log(process.argv[1])' -- "${R}"`, 'quoted'],
    [`python3 script.py "${R}"`, 'quoted'],
    [`jq -n --arg v "${R}" '$v'`, 'quoted'],
    [`awk '{ print }' "${R}"`, 'quoted'],
    [`sed 's/a/b/' -- "${R}"`, 'quoted'],
    [`tar -cf out.tar -- "${R}"`, 'quoted'],
    [`git add ./"${R}"`, 'quoted'],
    [`printf '%s' ${R}`, 'word'],
    [`cat dir/${R}.txt`, 'word'],
    [`X=${R}`, 'word'],
    [`ls > ${R}`, 'word'],
    [`case ${R} in a) echo a ;; esac`, 'word'],
    [`env X=${R} printenv X`, 'word'],
  ])('%s → %s', (command, placement) => {
    expect(verdict(command)).toBe(placement);
  });
});

describe('placeShellReferences: refused places', () => {
  it.each([
    ['command name', `${R} --help`, 'command-name position'],
    ['command name after env', `env X=1 ${R}`, 'command-name position'],
    ['command name after sudo', `sudo -u root "${R}" x`, 'command-name position'],
    ['command name after exec', `exec "${R}"`, 'command-name position'],
    ['command name after command', `command "${R}"`, 'command-name position'],
    ['command name after nohup nice', `nohup nice -n 5 "${R}"`, 'command-name position'],
    ['an unknown command', `$CMD "${R}"`, 'known only at run time'],
    ['single quotes', `echo '${R}'`, 'single quotes'],
    ["$'…'", `echo $'${R}'`, "$'…'"],
    ['an escaped reference', `echo \\${R}`, 'not expanded'],
    ['a here-document body', `cat <<EOF\n${R}\nEOF`, 'here-document'],
    ['a quoted here-document body', `cat <<'EOF'\n${R}\nEOF`, 'here-document'],
    ['a here-string', `cat <<< "${R}"`, 'here-string'],
    ['eval', `eval echo "${R}"`, '`eval` runs as code'],
    ['source', `source "${R}"`, '`source` runs as code'],
    ['dot', `. "${R}"`, '`.` runs as code'],
    ['bash -c text', `bash -c "echo ${R}"`, '`bash -c` runs as code'],
    ['sh -c text', `sh -c "echo ${R}"`, '`sh -c` runs as code'],
    ['dash -c text', `dash -c "echo ${R}"`, '`dash -c` runs as code'],
    ['zsh -c text', `zsh -c "echo ${R}"`, '`zsh -c` runs as code'],
    ['ksh -c text', `ksh -c "echo ${R}"`, '`ksh -c` runs as code'],
    ['a shell script name', `bash "${R}"`, 'names the script'],
    ['python -c text', `python3 -c "print('${R}')"`, 'may be read as code'],
    ['python -c before the code', `python -c "${R}"`, 'may be read as code'],
    ['node -e text', `node -e "${R}"`, 'may be read as code'],
    ['node -e argument without --', `node -e 'x' "${R}"`, 'may be read as code'],
    ['perl -e', `perl -e "print '${R}'"`, 'may be read as code'],
    ['ruby -e', `ruby -e "${R}"`, 'may be read as code'],
    ['php -r', `php -r "${R}"`, 'may be read as code'],
    ['awk program', `awk "{ print \\"${R}\\" }"`, 'program of `awk`'],
    ['gawk program', `gawk "${R}" file`, 'program of `gawk`'],
    ['awk -f', `awk -f prog.awk "${R}"`, 'program of `awk`'],
    ['sed program', `sed "s/${R}/x/" file`, 'after a literal `--`'],
    ['sed operand without --', `sed 's/a/b/' "${R}"`, 'after a literal `--`'],
    ['an option value that runs a command', `rsync -e "ssh ${R}" a b`, 'after a literal `--`'],
    ['a git config value', `git -c "core.sshCommand=${R}" fetch`, 'after a literal `--`'],
    ['a vim +command', `vim "+${R}" f`, 'after a literal `--`'],
    ['make arguments', `make build TAG=${R}`, '`make`, which expands $(…)'],
    ['jq filter', `jq ".${R}" file`, 'jq reads its filter'],
    ['xargs', `xargs echo "${R}"`, '`xargs`'],
    ['find', `find . -name "${R}"`, '`find`'],
    ['find -exec', `find . -exec echo "${R}" \\;`, '`find`'],
    ['find -execdir', `find . -execdir echo "${R}" +`, '`find`'],
    ['find -ok', `find . -ok rm "${R}" \\;`, '`find`'],
    ['ssh', `ssh host echo "${R}"`, '`ssh`'],
    ['su -c', `su -c "echo ${R}" root`, '`su`'],
    ['sudo -s', `sudo -s "echo ${R}"`, '`sudo -s` runs as code'],
    ['trap', `trap "echo ${R}" EXIT`, '`trap` runs as code'],
    ['watch', `watch "echo ${R}"`, '`watch` runs as code'],
    ['timeout … bash -c', `timeout 5 bash -c "echo ${R}"`, '`bash -c` runs as code'],
    ['nohup … sh -c', `nohup sh -c "${R}"`, '`sh -c` runs as code'],
    ['nice … eval', `nice eval "${R}"`, '`eval` runs as code'],
    ['a wrapper argument', `timeout "${R}" ls`, 'wrapper'],
    ['$((…))', `echo $(( ${R} + 1 ))`, 'arithmetic'],
    ['((…))', `(( x = ${R} ))`, 'arithmetic'],
    ['let', `let x=${R}`, '`let`'],
    ['an array subscript', `a[${R}]=1`, 'subscript'],
    ['a subscript in an expansion', `echo "\${a[${R}]}"`, 'subscript'],
    ['[[ -eq ]]', `[[ ${R} -eq 1 ]]`, '-eq/-ne/-lt/-le/-gt/-ge'],
    ['[[ -gt ]] quoted', `[[ 1 -gt "${R}" ]]`, '-eq/-ne/-lt/-le/-gt/-ge'],
    ['[[ -v ]]', `[[ -v ${R} ]]`, '-v or -R'],
    ['[ -v ]', `[ -v "${R}" ]`, '-v or -R'],
    ['declare name', `declare "${R}"`, 'names a variable'],
    ['declare -n value', `declare -n r="${R}"`, 'nameref'],
    ['typeset name', `typeset ${R}`, 'names a variable'],
    ['local name', `f() { local ${R}; }`, 'names a variable'],
    ['export name', `export ${R}`, 'names a variable'],
    ['readonly name', `readonly ${R}`, 'names a variable'],
    ['unset', `unset "${R}"`, 'names a variable'],
    ['read', `read -r "${R}"`, 'names a variable'],
    ['mapfile', `mapfile "${R}"`, 'names a variable'],
    ['printf -v', `printf -v "${R}" '%s' x`, 'printf -v'],
    ['a case pattern', `case x in ${R}) ;; esac`, 'case pattern'],
    ['a parameter expansion operator', `echo "\${HOME:-${R}}"`, '${…} of a shell variable'],
    ['a parameter expansion pattern', `echo "\${HOME//${R}/x}"`, '${…} of a shell variable'],
    ['backticks', `echo \`echo "${R}"\``, 'backticks'],
    ['an unquoted $(…)', `rm $(printf '%s' "${R}")`, 'splits and globs'],
    ['a process substitution', `diff <(echo "${R}") x`, 'process substitution'],
    ['a pipe into bash', `echo "${R}" | bash`, 'pipe read by `bash`'],
    ['a pipe into sudo sh', `printf '%s' "${R}" | sudo sh`, 'pipe read by `sh`'],
    ['a pipe into python', `echo "${R}" | cat | python3`, 'pipe read by `python3`'],
    ['a pipe into xargs', `echo "${R}" | xargs rm`, 'pipe read by `xargs`'],
    ['an output process substitution', `echo "${R}" > >(bash)`, 'process substitution'],
    ['a function of the command', `f() { eval "$1"; }; f "${R}"`, 'a function this command defines'],
    ['an array element', `a=(${R})`, 'array'],
    ['a for list', `for x in ${R}; do echo "$x"; done`, 'does not recognise'],
    ['a comment', `echo x # ${R}`, 'comment'],
    ['an assignment to PATH', `PATH=${R} ls`, 'PATH makes bash'],
    ['an assignment to BASH_ENV through env', `env BASH_ENV="${R}" bash x.sh`, 'BASH_ENV makes bash'],
    ['an assignment to LD_PRELOAD', `LD_PRELOAD="${R}" ls`, 'LD_PRELOAD makes bash'],
    ['invalid shell', `echo "${R}" && fi`, 'not valid shell'],
  ])('refuses %s', (_, command, reason) => {
    expect(verdict(command)).toContain(reason);
  });

  it('says how to write it instead', () => {
    expect(verdict(`echo '${R}'`)).toContain('put it in double quotes');
    expect(verdict(`bash -c "echo ${R}"`)).toContain('pass it through `env:`');
    expect(verdict(`${R}`)).toContain('name the command in the plan');
  });
});

describe('placeShellReferences: where each reference is', () => {
  it('locates every reference by UTF-16 offset and 1-based line:column', () => {
    const command = `echo "é${R}"\n  echo 𝄞 \${context.dir} '\${secrets.token}'`;
    const places = placeShellReferences(command);
    expect(places.map(({ raw, start, end, line, column }) => ({ raw, start, end, line, column }))).toEqual([
      { raw: R, start: 7, end: 7 + R.length, line: 1, column: 8 },
      { raw: '${context.dir}', start: 31, end: 45, line: 2, column: 11 },
      { raw: '${secrets.token}', start: 47, end: 63, line: 2, column: 27 },
    ]);
    expect(command.slice(31, 45)).toBe('${context.dir}');
    expect(places.map((p) => p.placement ?? 'refused')).toEqual(['quoted', 'word', 'refused']);
  });

  it('gives each occurrence its own verdict', () => {
    const places = placeShellReferences(`echo "${R}"; eval "${R}"`);
    expect(places.map((p) => p.placement ?? 'refused')).toEqual(['quoted', 'refused']);
  });

  it('finds nothing in a command without references', () => {
    expect(placeShellReferences('echo "$HOME" ${PATH}')).toEqual([]);
  });
});

describe('codeRunningEnvName', () => {
  it.each([
    'BASH_ENV',
    'ENV',
    'SHELLOPTS',
    'BASHOPTS',
    'PS4',
    'PROMPT_COMMAND',
    'BASH_FUNC_ls%%',
    'LD_PRELOAD',
    'LD_LIBRARY_PATH',
    'IFS',
    'PATH',
    'PYTHONSTARTUP',
    'PYTHONPATH',
    'NODE_OPTIONS',
    'PERL5OPT',
    'GIT_SSH_COMMAND',
    'PLANGATE_VALUE_1',
  ])('refuses %s', (name) => {
    expect(codeRunningEnvName(name)).toContain(name);
  });

  it.each(['HOME_DIR', 'TAG', 'MY_PATH', 'RELEASE'])('allows %s', (name) => {
    expect(codeRunningEnvName(name)).toBeUndefined();
  });
});
