/**
 * What in a command would keep running after the command ends: a job put in the background with
 * `&` that no later `wait` collects, and the programs and options that detach a process from its
 * caller (`nohup`, `setsid`, `disown`, daemonizing flags). A plan process must end with its
 * command: on AWS the plan-process function is frozen (then discarded) once its invocation
 * returns, so whatever outlived the command stops mid-way, and the next step cannot reach it.
 * The walk (analyze.ts) reports each as a `background` finding; the validator refuses them.
 */
import type { ShellWord } from './words.ts';

/** Why a background job found at `&` is refused. */
export const BACKGROUND_JOB = 'runs in the background with `&` and no later `wait` collects it';

/** Programs whose whole purpose is to let a process outlive the shell that started it. */
const DETACHING_PROGRAMS: ReadonlyMap<string, string> = new Map([
  ['nohup', 'keeps a process running after the command ends (nohup)'],
  ['setsid', 'starts a process in a session of its own, outside the command (setsid)'],
  ['disown', 'detaches a background job from the command (disown)'],
  ['daemonize', 'turns a process into a daemon (daemonize)'],
  ['daemon', 'turns a process into a daemon (daemon)'],
]);

/**
 * Programs that detach what they start with an option, one a line: the program, then the options
 * that do it (short letters, possibly grouped as in `-dm`; long names, `--detach=true` included).
 */
const DETACHING_OPTIONS: ReadonlyMap<string, { readonly short: string; readonly long: readonly string[] }> =
  new Map([
    ['start-stop-daemon', { short: 'b', long: ['background'] }],
    ['docker', { short: 'd', long: ['detach'] }],
    ['podman', { short: 'd', long: ['detach'] }],
    ['ssh', { short: 'f', long: [] }],
    ['screen', { short: 'd', long: [] }],
    ['tmux', { short: 'd', long: [] }],
  ]);

/** Why `name` with `args` leaves a process running after the command, or undefined. */
export function detachReason(name: string, args: readonly ShellWord[]): string | undefined {
  const program = DETACHING_PROGRAMS.get(name);
  if (program) return program;
  const options = DETACHING_OPTIONS.get(name);
  if (!options) return undefined;
  for (const { value } of args) {
    if (value === undefined) continue;
    if (value === '--') break;
    const long = /^--([\w-]+)(?:=(.*))?$/.exec(value);
    const detaches = long
      ? options.long.includes(long[1] as string) && long[2] !== 'false'
      : /^-[A-Za-z]+$/.test(value) && [...value.slice(1)].some((c) => options.short.includes(c));
    if (detaches) return `detaches what it starts (\`${name} ${value}\`)`;
  }
  return undefined;
}
