/** `plangate serve --max-in-flight N --max-queued N`: bad values are usage errors naming the option, before anything starts. */
import { expect, it, vi } from 'vitest';
import { run } from '../../lib/cli/serve.ts';

it.each([
  [['--max-in-flight', '0'], '--max-in-flight must be a positive integer, not "0"'],
  [['--max-in-flight', '2.5'], '--max-in-flight must be a positive integer, not "2.5"'],
  [['--max-queued=-1'], '--max-queued must be an integer >= 0, not "-1"'],
  [['--max-queued', 'many'], '--max-queued must be an integer >= 0, not "many"'],
])('%j is refused with exit 2', async (argv, message) => {
  const written: string[] = [];
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  try {
    expect(await run(argv)).toBe(2);
  } finally {
    stderr.mockRestore();
  }
  expect(written.join('')).toContain(`plangate serve: ${message}\n`);
});
