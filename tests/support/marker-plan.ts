/** A one-step plan that writes marker.txt once approved: the smallest plan a gate test can run. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Writes the plan as `<dir>/plan.json` with this approval policy (auto-approval off) and returns its path. */
export async function writeMarkerPlan(
  dir: string,
  id: string,
  approval: Record<string, unknown> = {},
): Promise<string> {
  const file = join(dir, 'plan.json');
  await writeFile(
    file,
    JSON.stringify({
      id,
      objective: 'Write a marker file once approved',
      sizePolicy: { minSteps: 1 },
      approval: { allowAutoApprove: false, ...approval },
      steps: [
        {
          id: 'mark',
          description: 'Write marker.txt',
          tool: 'shell',
          args: { command: 'echo ok > marker.txt' },
          contract: { kind: 'command', command: 'test -f marker.txt' },
        },
      ],
    }),
  );
  return file;
}
