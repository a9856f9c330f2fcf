/** Approving with modifications from the page's per-step fields: only what changed is sent. */
import { describe, expect, it } from 'vitest';
import {
  argFieldName,
  argFields,
  type EditableStep,
  modificationsFromForm,
} from '../../lib/runtime/gate/modifications.ts';

const shell: EditableStep = { id: 'clean', tool: 'shell', call: { form: 'command', text: 'rm -rf ./tmp' } };
const http: EditableStep = {
  id: 'ping',
  tool: 'http',
  call: { form: 'request', text: 'POST https://example.test/hook?a=1 b' },
};
const custom: EditableStep = {
  id: 'deploy',
  tool: 'deployer',
  call: { form: 'json', text: '{"env":"prod","force":false,"regions":["eu","us"]}' },
};
const form = (entries: [string, string][]) => new URLSearchParams(entries);

describe('argFields', () => {
  it('offers the shell command, an HTTP method and URL, and any other tool’s args one by one (JSON where not a string)', () => {
    expect(argFields(shell)).toEqual([{ key: 'command', value: 'rm -rf ./tmp', input: 'command' }]);
    expect(argFields(http)).toEqual([
      { key: 'method', value: 'POST', input: 'text' },
      { key: 'url', value: 'https://example.test/hook?a=1 b', input: 'text' },
    ]);
    expect(argFields(custom)).toEqual([
      { key: 'env', value: 'prod', input: 'text' },
      { key: 'force', value: false, input: 'json' },
      { key: 'regions', value: ['eu', 'us'], input: 'json' },
    ]);
    // Nothing to edit: an agent's task, a step whose call was cut from the view.
    expect(argFields({ id: 'a', tool: 'agent', call: { form: 'task', text: 'Fix it' } })).toEqual([]);
    expect(argFields({ id: 'b', tool: 'shell' })).toEqual([]);
  });
});

describe('modificationsFromForm', () => {
  const steps = [shell, http, custom];

  it('sends only the arguments that changed, typed as the tool takes them, and the steps ticked', () => {
    const result = modificationsFromForm(
      form([
        [argFieldName('clean', 'command'), 'rm -rf ./tmp/cache\r\necho done'],
        [argFieldName('ping', 'method'), 'POST'],
        [argFieldName('ping', 'url'), 'https://example.test/hook?a=1 b'],
        [argFieldName('deploy', 'env'), 'prod'],
        // The same value written differently is no change.
        [argFieldName('deploy', 'regions'), '[ "eu", "us" ]'],
        [argFieldName('deploy', 'force'), 'true'],
        ['skipSteps', 'ping'],
      ]),
      steps,
      { canSkip: true },
    );
    expect(result).toEqual({
      argOverrides: { clean: { command: 'rm -rf ./tmp/cache\necho done' }, deploy: { force: true } },
      skipSteps: ['ping'],
      changed: true,
    });
  });

  it('finds nothing changed when every field is as shown (or missing)', () => {
    expect(
      modificationsFromForm(form([[argFieldName('clean', 'command'), 'rm -rf ./tmp']]), steps, {
        canSkip: true,
      }),
    ).toEqual({
      argOverrides: {},
      skipSteps: [],
      changed: false,
    });
  });

  it('locates what is wrong and records nothing: JSON that is not, an emptied command, a step it cannot skip', () => {
    expect(
      modificationsFromForm(
        form([
          [argFieldName('deploy', 'force'), 'yes please'],
          [argFieldName('clean', 'command'), '   '],
          ['skipSteps', 'nope'],
        ]),
        steps,
        { canSkip: true },
      ),
    ).toEqual({
      problems: {
        'arg.deploy.force': 'force: not JSON (a string in quotes, a number, true/false, [..] or {..})',
        'arg.clean.command': 'command: the command cannot be empty (tick "Skip this step" not to run it)',
        skipSteps: '"nope" is not a step this gate can skip',
      },
    });
    // A step gate skips nothing: rejecting it is how its step is not run.
    expect(modificationsFromForm(form([['skipSteps', 'clean']]), [shell], { canSkip: false })).toEqual({
      problems: { skipSteps: '"clean" is not a step this gate can skip' },
    });
  });
});
