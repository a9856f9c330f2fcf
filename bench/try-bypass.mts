import { policyBypassAttempts } from './reliability/policy-bypass.ts';
const r = await policyBypassAttempts(process.cwd());
console.log(JSON.stringify(r, null, 1));
