/**
 * What plan code must never see, whichever settings this harness runs with: its own store, every
 * store and anchor key directory plangate would use by default (a harness whose settings move
 * them is not the only one on the machine: another run of the same user keeps its keys at the
 * defaults) and the ones the settings name.
 */
import { resolve } from 'node:path';
import { anchorKeyDir } from './anchor-key.ts';
import { stateRoot } from './store-directory.ts';

export function hiddenFromPlanCode(
  store: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  return [
    ...new Set([
      stateRoot(env),
      stateRoot({}),
      anchorKeyDir(env),
      anchorKeyDir({ XDG_CONFIG_HOME: env.XDG_CONFIG_HOME }),
      anchorKeyDir({}),
      ...(store ? [resolve(store)] : []),
    ]),
  ];
}
