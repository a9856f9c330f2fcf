import { fillShellCommand } from '/work/wt-shell/lib/runtime/secrets/shell-command.ts';
import { analyzeShell } from '/work/wt-shell/lib/plan/shell/index.ts';
const cmd = `printf '%s\\n' "\${steps.meta.semicolon}" \${steps.meta.substitution} "\${steps.meta.backticks}" "\${steps.meta.breakout}" > seen.txt
printf '%s\\n' "\${context.note}" "\${secrets.token}" "\${steps.meta.wipe}" >> seen.txt`;
const v = new Map([['${steps.meta.semicolon}','release-42; touch M1'],['${steps.meta.substitution}','$(touch M2)'],['${steps.meta.backticks}','`touch M3`'],['${steps.meta.breakout}','x" ; touch M4; echo "'],['${context.note}','line one\ntouch M5\n$(touch M6) `touch M7`'],['${secrets.token}','***'],['${steps.meta.wipe}','$(rm -rf victim)']]);
const f = fillShellCommand(cmd, v);
console.log(f.shown);
console.log(JSON.stringify(analyzeShell(f.shown)));
import { callFacts } from '/work/wt-shell/lib/policy/entities.ts';
import { Redactor } from '/work/wt-shell/lib/runtime/secrets/redact.ts';
v.set('${secrets.token}', 's3cret-$(touch M8)"; touch M9; echo "');
const g = fillShellCommand(cmd, v);
const args = new Redactor([v.get('${secrets.token}')!]).secretValues({ command: g.shown, env: g.env });
console.log(args.command);
console.log(JSON.stringify(callFacts({ tool: 'shell', args }, false)));
